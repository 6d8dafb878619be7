// The pushed-down FILTER expression against the real Redis 8 parser: for a broad generated set of
// filters, what Redis returns must contain every exact match (matchesFilters), and post-filtering must
// give exactly the exact matches. Tricky values double as injection attempts: if one could change the
// expression's structure, Redis would error, or return a set that is not the exact one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RANKS, type JsonObject, type JsonValue } from "../../src/catalogs/model.js";
import { provisionRedis8, type ProvisionedRedis } from "../../src/provisioning/index.js";
import { MAX_FILTERS, MAX_IN_ITEMS, matchesFilters, parseFilters, type MetadataFilter } from "../../src/search/filters.js";
import { redisAttributesJson, redisFilterExpression } from "../../src/storage/redis/filter-expression.js";
import { cacheDir } from "../support/cache-dir.js";
import { seededRandom as prng } from "../support/random.js";

const PORT = 6391;
const DIM = 4;
const KEY = `filter-expression-test:${process.pid}`;
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-filter-expr-"));
const logs: string[] = [];
let redis: ProvisionedRedis | undefined;
let client: Redis | undefined;


/** Strings that are hard to quote, compare or keep inert: each is some element's label. */
const TRICKY: string[] = [
  "red", "Red", "red ", "", " ", "röd", "赤", "Crème brûlée", "😀 emoji", "\u2028sep",
  'a"b', "a'b", `it's "quoted"`, "back\\slash", "trail\\", "\\", "\\\\", '\\"', "\\'", "\\u00e9",
  '" or 1 or "', "' or 1 or '", ") or (1", '") or (1 == 1) or ("', "] or [", ".label", "not", "null",
  "1", "0", "25", "-3", "1e3", "h42", "size 9", " .5", "+x",
  "new\nline", "tab\there", "cr\rhere", "nul\u0000byte", "bell\u0007", "form\ffeed", "lone\ud800",
];
const NUMBERS = [0, 1, 25, 25.5, -3, 42, 1e21, -1.5e25, 5e-7, 1e-300, 9007199254740993];
const DATES = ["2023-12-31T23:59:59Z", "2024-03-15T10:00:00Z", "2024-03-15", "2025-01-01T00:00:00Z"];

function buildElements(): Map<string, JsonObject> {
  const rand = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const scalars: JsonValue[] = [...TRICKY, ...NUMBERS, true, false];
  const elements = new Map<string, JsonObject>();
  for (let i = 0; i < 60; i++) {
    const a: JsonObject = { rank: RANKS[i % RANKS.length]! };
    // label: scalar strings only (or missing), so string filters on it must come back exactly.
    if (i % 13 !== 12) a.label = TRICKY[i % TRICKY.length]!;
    if (i % 7 !== 0) {
      const tags: JsonValue[] = Array.from({ length: Math.floor(rand() * 4) }, () => pick(scalars));
      if (i % 9 === 0) tags.push({ x: 1 }); // an object in an array: Redis cannot read the array
      if (i % 10 === 0) tags.push(["red", 25]); // a nested array
      if (i % 11 === 0) tags.push(null);
      a.tags = tags;
    }
    a.price = pick<JsonValue>([...NUMBERS, "25", true, null, [25, 42]]);
    if (i % 5 === 0) delete a.price;
    if (i % 4 !== 0) a.onSale = pick<JsonValue>([true, false, 1, 0, "true", null]);
    if (i % 6 === 0) a.note = null;
    if (i % 8 === 0) a.dims = { w: i, h: [1, 2], label: "red" };
    if (i % 3 !== 0) a.released = pick(DATES);
    // .my-field must be one selector, not .my minus .field: the values tell them apart.
    if (i % 2 === 0) Object.assign(a, { "my-field": i % 5, my: (i % 5) + 10, field: 10 });
    if (i % 5 === 1) Object.assign(a, { "weird key": "red", "x.y": 25, é: "red", 'quote"key': "red" });
    a.mixed = pick<JsonValue>([...scalars.slice(0, 5), 25, null, [], ["red", 25], { red: 1 }, [{ a: 1 }], false]);
    if (i === 59) Object.defineProperty(a, "__proto__", { value: "red", enumerable: true, writable: true, configurable: true });
    elements.set(`e${String(i).padStart(2, "0")}`, a);
  }
  return elements;
}

const elements = buildElements();
const ids = [...elements.keys()].sort();

const FIELDS = [
  "label", "tags", "price", "onSale", "note", "dims", "released", "my-field", "my", "field", "weird key", "x.y",
  "é", 'quote"key', "mixed", "rank", "__proto__", "missing",
];

const EQ_VALUES: (string | number | boolean)[] = [...TRICKY, ...NUMBERS, -0, true, false, "NO_BOOST", "SUPER_BOOST"];
const ORDER_VALUES: (string | number)[] = [-5, 0, 1, 25, 25.5, 1e21, 5e-7, 1e-300, -1e-300, "", "2024", ...DATES, "a", "R", "red"];
const IN_VALUES: (string | number)[][] = [
  ["red", "blue"], [25, "25"], [1, 0], [42, "red ", 5e-7], ['" or 1 or "', ") or (1"], ["\\", "\\\\"], ["BOOST"],
  TRICKY, [...TRICKY.slice(0, 30), ...NUMBERS].slice(0, 100), Array.from({ length: 100 }, (_, i) => i - 50),
];

function singleFilters(): MetadataFilter[][] {
  const out: MetadataFilter[][] = [];
  const raw = (field: string, operator: string, value: JsonValue) => out.push(parseFilters([{ field, operator, value }]));
  for (const field of FIELDS) {
    for (const v of EQ_VALUES) for (const op of ["eq", "ne"]) raw(field, op, v);
    for (const v of ORDER_VALUES) for (const op of ["gt", "gte", "lt", "lte"]) raw(field, op, v);
    for (const v of IN_VALUES) for (const op of ["in", "nin"]) raw(field, op, v);
    for (const v of [true, false]) raw(field, "exists", v);
  }
  return out;
}

function combinedFilters(count: number): MetadataFilter[][] {
  const rand = prng(7);
  const singles = singleFilters();
  return Array.from({ length: count }, () => {
    const n = 2 + Math.floor(rand() * 2);
    return Array.from({ length: n }, () => singles[Math.floor(rand() * singles.length)]![0]!);
  });
}

async function vsim(expr: string): Promise<string[]> {
  const reply = (await client!.call("VSIM", KEY, "VALUES", String(DIM), "1", "0", "0", "0", "TRUTH", "COUNT", "1000", "FILTER", expr)) as string[];
  return reply.sort();
}

interface Outcome {
  filters: readonly MetadataFilter[];
  expr: string | undefined;
  exact: string[];
  /** What Redis returned; every element when nothing was pushed. */
  candidates: string[];
}

/** An eq and an in on the string field `label` for each TRICKY value. */
function labelFilterSets(): MetadataFilter[][] {
  return TRICKY.flatMap((s) => [
    parseFilters([{ field: "label", operator: "eq", value: s }]),
    parseFilters([{ field: "label", operator: "in", value: [s, "no such label"] }]),
  ]);
}

/** Every field taken for one holding strings only (the bare form wherever a value allows it): the superset must hold whatever the data. */
const EVERY_FIELD_STRINGS: ReadonlySet<string> = new Set(FIELDS);

async function run(filterSets: readonly (readonly MetadataFilter[])[], stringFields?: ReadonlySet<string>): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const batch = 200;
  for (let start = 0; start < filterSets.length; start += batch) {
    const part = filterSets.slice(start, start + batch);
    outcomes.push(
      ...(await Promise.all(
        part.map(async (filters) => {
          const expr = redisFilterExpression(filters, stringFields);
          const exact = ids.filter((id) => matchesFilters(filters, elements.get(id)!));
          let candidates: string[];
          try {
            candidates = expr === undefined ? ids : await vsim(expr);
          } catch (err) {
            throw new Error(`Redis rejected ${JSON.stringify(expr)} for ${JSON.stringify(filters)}: ${(err as Error).message}`);
          }
          return { filters, expr, exact, candidates };
        }),
      )),
    );
  }
  return outcomes;
}

/** The property under test; returns readable failures rather than failing on the first. */
function violations(outcomes: readonly Outcome[]): string[] {
  const out: string[] = [];
  for (const o of outcomes) {
    const got = new Set(o.candidates);
    const missed = o.exact.filter((id) => !got.has(id));
    const post = o.candidates.filter((id) => matchesFilters(o.filters, elements.get(id)!));
    if (missed.length > 0 || post.join() !== o.exact.join()) {
      out.push(`${JSON.stringify(o.filters)} as ${JSON.stringify(o.expr)}: missed ${missed.join(",")}`);
    }
  }
  return out;
}

beforeAll(async () => {
  try {
    redis = await provisionRedis8({ cacheDir, port: PORT, dataDir, log: (line) => logs.push(line) });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${logs.join("\n")}`);
  }
  client = new Redis(PORT, "127.0.0.1", { maxRetriesPerRequest: 1 });
  await client.del(KEY);
  const rand = prng(1);
  await Promise.all(
    ids.map((id) => {
      const vector = Array.from({ length: DIM }, () => String(rand() + 0.01));
      const attrs = redisAttributesJson(elements.get(id)!);
      return client!.call("VADD", KEY, "VALUES", String(DIM), ...vector, id, "SETATTR", attrs);
    }),
  );
}, 180_000);

afterAll(async () => {
  await client?.del(KEY).catch(() => undefined);
  await client?.quit().catch(() => undefined);
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("redisFilterExpression against Redis 8", () => {
  it("runs on a Redis with vector sets whose TRUTH scan returns every element", async () => {
    expect(Number(redis!.version.split(".")[0])).toBeGreaterThanOrEqual(8);
    expect(await vsim("1")).toEqual(ids);
  });

  it("returns a superset of the exact matches for every single filter", async () => {
    const outcomes = await run(singleFilters());
    expect(violations(outcomes)).toEqual([]);
    // Not vacuous: many filters are pushed, pushed filters prune, and many have true matches.
    const pushed = outcomes.filter((o) => o.expr !== undefined);
    expect(pushed.length).toBeGreaterThan(outcomes.length * 0.25);
    expect(pushed.filter((o) => o.candidates.length < ids.length).length).toBeGreaterThan(pushed.length * 0.8);
    expect(pushed.filter((o) => o.exact.length > 0).length).toBeGreaterThan(200);
    // ... including true matches whose field plain JSON would hide from Redis (objects, arrays of them).
    const hidden = (id: string, field: string) => {
      const v = Object.hasOwn(elements.get(id)!, field) ? elements.get(id)![field] : undefined;
      return JSON.stringify(v)?.includes("{") === true || (Array.isArray(v) && v.some(Array.isArray));
    };
    const hard = pushed.filter((o) => o.exact.some((id) => hidden(id, o.filters[0]!.field)));
    expect(new Set(hard.map((o) => o.filters[0]!.operator))).toEqual(new Set(["eq", "in", "exists"]));
    expect(hard.length).toBeGreaterThan(10);
  });

  it("returns a superset for combinations of two and three filters", async () => {
    const outcomes = await run(combinedFilters(1500));
    expect(violations(outcomes)).toEqual([]);
    expect(outcomes.filter((o) => o.expr?.includes(" and ")).length).toBeGreaterThan(200);
  });

  it("returns a superset with eq and in pushed bare on every field (as if a sample had seen strings only), arrays and numbers included", async () => {
    for (const filterSets of [singleFilters(), combinedFilters(1500)]) {
      const outcomes = await run(filterSets, EVERY_FIELD_STRINGS);
      expect(violations(outcomes)).toEqual([]);
      // Not vacuous: many took the bare form, and some of those have true matches in arrays.
      const bare = outcomes.filter((o) => o.expr !== undefined && !o.expr.includes("!=") && / == ["']/.test(o.expr));
      expect(bare.length).toBeGreaterThan(100);
      const inArrays = bare.filter((o) => o.exact.some((id) => Array.isArray(elements.get(id)![o.filters[0]!.field])));
      expect(inArrays.length).toBeGreaterThan(0);
    }
  });

  it("returns exactly the matches for bare string eq and in on a string field", async () => {
    const outcomes = await run(labelFilterSets(), new Set(["label"]));
    expect(violations(outcomes)).toEqual([]);
    const bare = outcomes.filter((x) => x.expr !== undefined && !x.expr.includes("!="));
    expect(bare.length).toBeGreaterThan(20);
    for (const o of bare) expect({ expr: o.expr, got: o.candidates }).toEqual({ expr: o.expr, got: o.exact });
  });

  it("returns exactly the matches for string eq and in on a string field: values cannot change the expression", async () => {
    const outcomes = await run(labelFilterSets());
    expect(violations(outcomes)).toEqual([]);
    for (const o of outcomes.filter((x) => x.expr !== undefined)) {
      expect({ expr: o.expr, got: o.candidates }).toEqual({ expr: o.expr, got: o.exact });
    }
    const pushedValues = outcomes.filter((o) => o.expr !== undefined && o.filters[0]!.operator === "eq").map((o) => o.filters[0]!.value);
    expect(pushedValues).toEqual(expect.arrayContaining(['" or 1 or "', "' or 1 or '", ") or (1", '") or (1 == 1) or ("', "\\\\", '\\"', "\\'", "new\nline", "\\u00e9"]));
  });

  it("does not push what Redis cannot read back exactly", () => {
    const exprFor = (field: string, operator: string, value: JsonValue) => redisFilterExpression(parseFilters([{ field, operator, value }]));
    for (const s of [`it's "quoted"`, "trail\\", "\\", "nul\u0000byte", "bell\u0007", "form\ffeed", "lone\ud800"]) {
      expect(exprFor("label", "eq", s)).toBeUndefined();
      expect(exprFor("label", "in", ["red", s])).toBeUndefined();
    }
    expect(exprFor("price", "gt", 1e-300)).toBeUndefined(); // longer than Redis's 255-character number token
    expect(exprFor("released", "gt", "2024")).toBeUndefined(); // Redis orders numbers only
    expect(exprFor("weird key", "eq", "red")).toBeUndefined();
    expect(exprFor("x.y", "eq", 25)).toBeUndefined();
    expect(exprFor("é", "eq", "red")).toBeUndefined();
    for (const field of ["a == 1 or 1", "a) or (1", "a\u0000", 'a"', "a.b", " a", "a "]) expect(exprFor(field, "eq", 1)).toBeUndefined();
    for (const op of ["ne", "nin"]) expect(exprFor("label", op, op === "ne" ? "red" : ["red"])).toBeUndefined();
    expect(exprFor("label", "exists", false)).toBeUndefined();
  });

  it("writes the expressions it is documented to write", () => {
    const exprFor = (filters: { field: string; operator: string; value: JsonValue }[]) => redisFilterExpression(parseFilters(filters));
    expect(exprFor([{ field: "label", operator: "eq", value: 'a"b' }])).toBe(`((.label == 'a"b' and .label != "") or 'a"b' in .label)`);
    expect(exprFor([{ field: "label", operator: "in", value: ["", "_", "x"] }])).toBe(
      '((.label in ["", "_", "x"] and .label != "__") or "" in .label or "_" in .label or "x" in .label)',
    );
    expect(exprFor([{ field: "on-sale", operator: "eq", value: true }])).toBe("(.on-sale == 1 or 1 in .on-sale)");
    expect(exprFor([{ field: "price", operator: "gte", value: 1e21 }, { field: "w", operator: "lt", value: -5e-7 }])).toBe(
      ".price >= 1e21 and .w < -0.0000005",
    );
    expect(exprFor([{ field: "t", operator: "in", value: ["a", 2] }, { field: "t", operator: "exists", value: true }])).toBe(
      '(.t == 2 or (.t == "a" and .t != "") or "a" in .t or 2 in .t) and .t == .t',
    );
    expect(exprFor([{ field: "t", operator: "ne", value: "a" }])).toBeUndefined();
    // On a field sampled as strings: bare for values that read as no number, guarded for the rest.
    const sampled = (filters: { field: string; operator: string; value: JsonValue }[]) => redisFilterExpression(parseFilters(filters), new Set(["label", "t"]));
    expect(sampled([{ field: "label", operator: "eq", value: "red" }])).toBe('.label == "red"');
    expect(sampled([{ field: "label", operator: "in", value: ["red", 'a"b'] }])).toBe(`(.label == "red" or .label == 'a"b')`);
    expect(sampled([{ field: "label", operator: "eq", value: "red" }, { field: "other", operator: "eq", value: "red" }])).toBe(
      '.label == "red" and ((.other == "red" and .other != "") or "red" in .other)',
    );
    expect(sampled([{ field: "label", operator: "in", value: ["h42", "size 9", "", "+x"] }])).toBe(
      '(.label == "h42" or .label == "size 9" or .label == "" or .label == "+x")',
    );
    for (const value of ["42", " 7", "+5", "-3", ".5", " inf", "-Infinity", "NaN", "nan(1)", "0x1f"]) {
      expect(sampled([{ field: "label", operator: "eq", value }])).toBe(exprFor([{ field: "label", operator: "eq", value }]));
    }
    expect(sampled([{ field: "t", operator: "in", value: ["a", 2] }])).toBe(exprFor([{ field: "t", operator: "in", value: ["a", 2] }]));
    expect(sampled([{ field: "t", operator: "eq", value: true }])).toBe(exprFor([{ field: "t", operator: "eq", value: true }]));
  });

  it("is accepted by Redis at the largest size parseFilters allows", async () => {
    const items = Array.from({ length: MAX_IN_ITEMS }, (_, i) => `${"long value ".repeat(10)}${i}`);
    const filters = parseFilters(Array.from({ length: MAX_FILTERS }, () => ({ field: "tags", operator: "in", value: items })));
    const expr = redisFilterExpression(filters)!;
    expect(expr.length).toBeGreaterThan(500_000);
    // No exact match. The only false positives: arrays holding 0 or false, as `"s" in .tags` compares
    // a non-numeric string with a number as 0 == 0.
    const zeroInTags = (id: string) => [0, false].some((z) => (elements.get(id)!.tags as JsonValue[] | undefined)?.includes(z));
    expect(await vsim(expr)).toEqual(ids.filter(zeroInTags));
  });

  it("reads .my-field as one selector, not .my minus .field", async () => {
    const outcomes = await run([0, 1, 2, 3, 4].map((v) => parseFilters([{ field: "my-field", operator: "eq", value: v }])));
    for (const o of outcomes) {
      expect(o.expr).toContain(".my-field");
      expect(o.candidates).toEqual(o.exact);
      expect(o.exact.length).toBeGreaterThan(0);
    }
  });

  it("needs redisAttributesJson: with plain JSON, an object inside an array hides the whole field from Redis", async () => {
    const key = `${KEY}:plain`;
    const attrs: JsonObject = { tags: ["red", { x: 1 }], dims: { w: 1 } };
    try {
      await client!.call("VADD", key, "VALUES", "2", "1", "0", "plain", "SETATTR", JSON.stringify(attrs));
      await client!.call("VADD", key, "VALUES", "2", "1", "0", "readable", "SETATTR", redisAttributesJson(attrs));
      for (const filters of [
        parseFilters([{ field: "tags", operator: "eq", value: "red" }]),
        parseFilters([{ field: "dims", operator: "exists", value: true }]),
      ]) {
        expect(matchesFilters(filters, attrs)).toBe(true);
        const got = (await client!.call("VSIM", key, "VALUES", "2", "1", "0", "TRUTH", "FILTER", redisFilterExpression(filters)!)) as string[];
        expect(got).toEqual(["readable"]);
      }
      // What Redis hands back parses to the metadata itself: the readable view is shadowed.
      expect(JSON.parse((await client!.call("VGETATTR", key, "readable")) as string)).toEqual(attrs);
    } finally {
      await client!.del(key);
    }
  });

  it("writes attribute JSON that parses back to the attributes, own keys and order included", () => {
    for (const attrs of elements.values()) {
      const parsed = JSON.parse(redisAttributesJson(attrs)) as JsonObject;
      expect(parsed).toEqual(attrs);
      expect(Object.keys(parsed)).toEqual(Object.keys(attrs));
    }
    expect(redisAttributesJson({})).toBe("{}");
    expect(redisAttributesJson({ a: 1, b: [1, "x", null] })).toBe('{"a":1,"b":[1,"x",null]}');
    expect(redisAttributesJson({ a: 1, o: { x: [1] }, t: ["x", ["y"], { z: 1 }], b: 2 })).toBe(
      '{"a":1,"o":null,"t":["x",null,null],"a":1,"o":{"x":[1]},"t":["x",["y"],{"z":1}],"b":2}',
    );
    expect(redisAttributesJson({ o: {} })).toBe('{"o":null,"o":{}}');
  });
});
