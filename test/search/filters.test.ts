// Metadata filters end to end, through REST /search and /recs (and once over gRPC), against the real
// Redis 8 and MariaDB. Every expected answer is the exact ranking filtered by a reference check
// written here from the semantics table in src/search/filters.ts, not by the service's own code.
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedSentenceEncoder, TextImageMap } from "../../src/embeddings/index.js";
import { Filter_Operator } from "../../src/gen/vitrine/v1/common_pb.js";
import { RecommendationService } from "../../src/gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../../src/gen/vitrine/v1/search_service_pb.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import {
  COLOUR_NAMES,
  createCatalog,
  expectHits,
  ids,
  openText,
  postProducts,
  processProducts,
  productQuery,
  productsPath,
  ranking,
  serve,
  storedMap,
  syntheticProducts,
  textQuery,
} from "../support/search-fixture.js";
import type { Hit, Indexed, Json, JsonRecord, ProductSpec, Rank, Served } from "../support/search-fixture.js";
import { forEachPrimary } from "../../src/storage/redis/index.js";
import { SCAN_PROBE_EVERY, SHORT_BEFORE_SCAN } from "../../src/search/short-filters.js";
import { facetToken } from "../../src/search/index.js";
import { catalogs } from "../../src/storage/mysql/schema.js";
import { monitorCommands } from "../support/redis-monitor.js";

// ---------------------------------------------------------------------------------------------
// The reference rule, from the table in src/search/filters.ts (MongoDB-like):
//   eq      scalar equal (same JSON type), or an array field with an element equal to it
//   ne      not eq (missing fields match)
//   gt..lte the field is a scalar of the value's type (number or string) and compares so
//   in      eq for some item;  nin: not in (missing fields match)
//   exists  true: the key is present (even with null); false: absent
// Field names are whole top-level keys (no dotted paths); metadata is seen with `rank` set.
// ---------------------------------------------------------------------------------------------
interface Filter {
  field: string;
  operator: "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "nin" | "exists";
  value: Json;
}

function scalarEquals(a: Json | undefined, b: Json): boolean {
  if (a === null || a === undefined || typeof a === "object") return false;
  if (typeof a !== typeof b) return false;
  return a === b;
}

function eqRule(actual: Json | undefined, v: Json): boolean {
  if (Array.isArray(actual)) {
    for (const element of actual) if (scalarEquals(element, v)) return true;
    return false;
  }
  return scalarEquals(actual, v);
}

function orderRule(actual: Json | undefined, op: "gt" | "gte" | "lt" | "lte", v: Json): boolean {
  const kind = typeof v;
  if ((kind !== "number" && kind !== "string") || typeof actual !== kind) return false;
  const [a, b] = [actual as number | string, v as number | string];
  if (op === "gt") return a > b;
  if (op === "gte") return a >= b;
  if (op === "lt") return a < b;
  return a <= b;
}

function reference(filters: readonly Filter[], attributes: JsonRecord): boolean {
  for (const f of filters) {
    const has = Object.prototype.hasOwnProperty.call(attributes, f.field);
    const actual = has ? attributes[f.field] : undefined;
    let ok: boolean;
    switch (f.operator) {
      case "eq":
        ok = has && eqRule(actual, f.value);
        break;
      case "ne":
        ok = !(has && eqRule(actual, f.value));
        break;
      case "in":
        ok = has && (f.value as Json[]).some((v) => eqRule(actual, v));
        break;
      case "nin":
        ok = !(has && (f.value as Json[]).some((v) => eqRule(actual, v)));
        break;
      case "exists":
        ok = has === f.value;
        break;
      default:
        ok = has && orderRule(actual, f.operator, f.value);
    }
    if (!ok) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The catalog: 300 products whose metadata vary in type and presence.
// ---------------------------------------------------------------------------------------------
const COUNT = 300;
const BRANDS = ["Acme", "acme", "Zeta", "Nord", "Öko"];
/** Labels that would break a naively quoted expression; each is one product's label. */
const TRICKY = ['" or 1 or "', "') or (1 == 1) or ('", ") or (", "back\\slash", "trail\\", "new\nline", `it's "quoted"`, "red"];
const labelOf = (i: number) => (i % 50 === 11 ? TRICKY[(i - 11) / 50] : i === 12 ? TRICKY[6] : i === 13 ? TRICKY[7] : undefined);
/** The very selective ones: 3 of 300. */
const RARE = [17, 151, 263];
/** 40 of 300. */
const inGroup = (i: number) => i % 7 === 2 && i < 280;
const BOOSTED: Record<string, Rank> = { "sku-3": "BOOST", "sku-4": "BOOST", "sku-5": "SUPER_BOOST" };

function metadataOf(i: number): JsonRecord {
  const m: JsonRecord = { colour: COLOUR_NAMES[i % 11]! };
  if (i % 10 !== 9) m.price = i % 4 === 0 ? 10 + i : 10.5 + i;
  if (i % 50 === 7) m.price = String(10 + i); // "17", "67", ...: a string, never equal to the number
  if (i % 17 !== 0) m.inStock = i % 3 === 0;
  if (i % 29 === 5) m.inStock = null; // present, but null
  if (i % 3 === 0) m.tags = ["sale", `t${i % 4}`, i % 5];
  else if (i % 3 === 1) m.tags = i % 2 === 0 ? [] : [["sale"], { sale: true }, `t${i % 4}`, null]; // nested: never equal
  if (i % 4 !== 3) m["brand name"] = BRANDS[i % 5]!;
  if (i % 6 === 0) m["a.b"] = (i / 6) % 4;
  if (i % 6 === 1) m.a = { b: ((i - 1) / 6) % 4 }; // `a.b` is not a path into this
  if (i % 8 === 0) m.released = `2024-${String(1 + (i % 12)).padStart(2, "0")}-15`;
  if (i === 14) Object.defineProperty(m, "constructor", { value: "yes", enumerable: true, writable: true, configurable: true });
  const label = labelOf(i);
  if (label !== undefined) m.label = label;
  if (RARE.includes(i)) {
    m.rare = true;
    m["rare flag"] = "yes";
  }
  if (inGroup(i)) {
    m.group = "forty";
    m["group name"] = "forty";
  }
  return m;
}

const QUERY = "blue denim jacket";
const SEARCH_WEIGHT = 0.5;
const SUBJECT = "sku-20";
const RECS_WEIGHT = 0.6;

let text: OpenedSentenceEncoder;
beforeAll(async () => {
  text = await openText();
}, 120_000);
afterAll(async () => {
  await text?.close();
});

interface Fixture {
  s: Served;
  catalogId: string;
  map: TextImageMap;
  indexed: Indexed[];
}

async function fixture(env: Record<string, string>, count = COUNT): Promise<Fixture> {
  const s = await serve(env);
  const catalogId = await createCatalog(s);
  const specs: ProductSpec[] = syntheticProducts(text, count, { seed: 11, metadataOf });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
  for (const [id, rank] of Object.entries(BOOSTED)) {
    expect((await s.api.put(`${productsPath(s, catalogId)}/${id}/rank`, { rank })).status).toBe(200);
  }
  const indexed = specs.map((p) => ({ id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: BOOSTED[p.id] ?? ("NO_BOOST" as Rank) }));
  return { s, catalogId, map: await storedMap(s, catalogId), indexed };
}

function expectedSearch(f: Fixture, filters: readonly Filter[], topK: number, query = QUERY): Required<Hit>[] {
  return ranking(f.map, f.indexed, textQuery(text, query), SEARCH_WEIGHT)
    .filter((h) => h.score >= 0 && reference(filters, h.metadata))
    .slice(0, topK);
}

function expectedRecs(f: Fixture, filters: readonly Filter[], topK: number, subject = SUBJECT): Required<Hit>[] {
  const e = f.indexed.find((p) => p.id === subject)!.embeddings;
  return ranking(f.map, f.indexed.filter((p) => p.id !== subject), productQuery(f.map, e), RECS_WEIGHT)
    .filter((h) => reference(filters, h.metadata))
    .slice(0, topK);
}

const searchBody = (f: Fixture, filters: readonly unknown[], topK: number, query = QUERY) => ({
  organizationId: f.s.org,
  catalogId: f.catalogId,
  query,
  topK,
  visual_weight: SEARCH_WEIGHT,
  similarity_threshold: 0,
  filters,
});
const recsBody = (f: Fixture, filters: readonly unknown[], topK: number, subject = SUBJECT) => ({
  organizationId: f.s.org,
  catalogId: f.catalogId,
  productId: subject,
  topK,
  visualWeight: RECS_WEIGHT,
  filters,
});

/** How each /search of `body` asked the catalog's sets (one, or each part), in order: "hnsw" (EF) or "scan" (TRUTH). */
async function searchesOf(f: Fixture, body: object, times: number): Promise<string[][]> {
  const asked: string[][] = [];
  const tag = `${f.s.server.config.redis.keyPrefix}{${f.catalogId}`;
  const isVectors = (key: string | undefined) => key !== undefined && key.startsWith(tag) && /^(~[^}]*)?\}:vectors$/.test(key.slice(tag.length));
  let current: string[] = [];
  const monitors = await forEachPrimary(f.s.server.app.redis, (node) =>
    monitorCommands(node.options, (args) => {
      if (args[0]?.toUpperCase() === "VSIM" && isVectors(args[1])) current.push(args.some((a) => a.toUpperCase() === "TRUTH") ? "scan" : "hnsw");
    }),
  );
  try {
    for (let k = 0; k < times; k++) {
      const res = await f.s.api.post("/search", body);
      expect(res.status).toBe(200);
      expectHits(res.body.results, expectedSearch(f, (body as { filters: Filter[] }).filters, 10, QUERY));
      // A filter being learned beside the search (SEARCH_FILTER_LEARNING) counts as its VSIMs.
      await f.s.server.app.searchIndex.index.settled();
      // MONITOR's lines may trail the reply.
      await new Promise((r) => setTimeout(r, 100));
      asked.push(current);
      current = [];
    }
    return asked;
  } finally {
    await Promise.all(monitors.map((m) => m.stop()));
  }
}

/** vitrine_filter_learnings_total of `outcome`, as the service's /metrics shows it. */
async function learnings(f: Fixture, outcome: string): Promise<number> {
  const text = await (await fetch(`${f.s.server.restUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`vitrine_filter_learnings_total{outcome="${outcome}"} `));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

/** Runs the filters through /search (all matches, and a top 5) and /recs; compares with the reference. */
async function check(f: Fixture, filters: Filter[], what: string): Promise<{ search: number; recs: number }> {
  const all = await f.s.api.post("/search", searchBody(f, filters, COUNT));
  expect(all.status, `${what}: ${JSON.stringify(all.body)}`).toBe(200);
  const expectedAll = expectedSearch(f, filters, COUNT);
  expectHits(all.body.results, expectedAll, `${what} /search`);
  // The shown metadata is the product's own (nested arrays and objects included) with its rank.
  expect(all.body.results.map((h: Hit) => h.metadata), what).toEqual(expectedAll.map((h) => h.metadata));

  const top = await f.s.api.post("/search", searchBody(f, filters, 5));
  expect(top.status, what).toBe(200);
  expectHits(top.body.results, expectedSearch(f, filters, 5), `${what} /search top 5`);

  const recs = await f.s.api.post("/recs", recsBody(f, filters, COUNT));
  expect(recs.status, `${what}: ${JSON.stringify(recs.body)}`).toBe(200);
  const expectedAllRecs = expectedRecs(f, filters, COUNT);
  expectHits(recs.body.results, expectedAllRecs, `${what} /recs`);
  expect(recs.body.results.map((h: Hit) => h.metadata), what).toEqual(expectedAllRecs.map((h) => h.metadata));

  const topRecs = await f.s.api.post("/recs", recsBody(f, filters, 7));
  expectHits(topRecs.body.results, expectedRecs(f, filters, 7), `${what} /recs top 7`);
  return { search: expectedAll.length, recs: expectedAllRecs.length };
}

const F = (field: string, operator: Filter["operator"], value: Json): Filter => ({ field, operator, value });

/** [name, filters, how many products (of 300, the subject included) the reference must let through] */
const CASES: [string, Filter[], number | "some" | "none"][] = [
  // eq
  ["eq string", [F("colour", "eq", "red")], 27],
  ["eq string is case-sensitive", [F("brand name", "eq", "acme")], "some"],
  ["eq a case that matches nothing", [F("colour", "eq", "Red")], "none"],
  ["eq number", [F("price", "eq", 14)], 1],
  ["eq number never matches a numeric string", [F("price", "eq", 17)], "none"],
  ["eq string matches the numeric string only", [F("price", "eq", "17")], 1],
  ["eq true", [F("inStock", "eq", true)], "some"],
  ["eq false", [F("inStock", "eq", false)], "some"],
  ["eq an array element (string)", [F("tags", "eq", "sale")], 100],
  ["eq an array element (number)", [F("tags", "eq", 3)], 20],
  ["eq an element that also sits in nested arrays/objects", [F("tags", "eq", "t1")], "some"],
  ["eq on a field with a space", [F("brand name", "eq", "Acme")], "some"],
  ["eq on a dotted key is the whole key", [F("a.b", "eq", 2)], 12],
  ["eq on the rank", [F("rank", "eq", "BOOST")], 2],
  ["eq on an own key named like an Object.prototype member", [F("constructor", "eq", "yes")], 1],
  // ne
  ["ne string (missing fields match)", [F("colour", "ne", "red")], 273],
  ["ne true (missing and null match)", [F("inStock", "ne", true)], "some"],
  ["ne an array element", [F("tags", "ne", "sale")], 200],
  ["ne on a field with a space", [F("brand name", "ne", "Acme")], "some"],
  ["ne on a field nobody has", [F("nope", "ne", "x")], 300],
  // order
  ["gt number", [F("price", "gt", 200)], "some"],
  ["gte number", [F("price", "gte", 14)], "some"],
  ["lt number", [F("price", "lt", 20)], "some"],
  ["lte fractional number", [F("price", "lte", 20.5)], "some"],
  ["gt string compares strings only", [F("price", "gt", "100")], "some"],
  ["gte ISO date", [F("released", "gte", "2024-06-15")], "some"],
  ["lt date prefix", [F("released", "lt", "2024-03")], "some"],
  ["gt never matches arrays", [F("tags", "gt", 0)], "none"],
  ["gt never matches booleans", [F("inStock", "gte", 0)], "none"],
  ["lte on a dotted key", [F("a.b", "lte", 1)], "some"],
  // in / nin
  ["in strings", [F("colour", "in", ["red", "blue"])], "some"],
  ["in mixed numbers and strings", [F("price", "in", [14, "17", 30, 40.5])], 4],
  ["in array elements", [F("tags", "in", ["t2", 4])], "some"],
  ["in on a field with a space", [F("brand name", "in", ["Zeta", "Öko"])], "some"],
  ["in ranks", [F("rank", "in", ["BOOST", "SUPER_BOOST"])], 3],
  ["nin strings", [F("colour", "nin", ["red", "blue", "green"])], "some"],
  ["nin an array element", [F("tags", "nin", ["sale"])], 200],
  ["nin on a field with a space", [F("brand name", "nin", ["Acme"])], "some"],
  // exists
  ["exists true (null counts as present)", [F("inStock", "exists", true)], "some"],
  ["exists false", [F("inStock", "exists", false)], 17],
  ["exists true on a dotted key", [F("a.b", "exists", true)], 50],
  ["exists true on an object field", [F("a", "exists", true)], 50],
  ["exists false on a dotted key", [F("a.b", "exists", false)], 250],
  ["exists on an own key named constructor", [F("constructor", "exists", true)], 1],
  ["exists does not see Object.prototype", [F("toString", "exists", true)], "none"],
  ["exists on a field with a space", [F("rare flag", "exists", true)], 3],
  // AND
  ["eq and gt", [F("colour", "eq", "red"), F("price", "gt", 50)], "some"],
  ["eq, ne and in", [F("tags", "eq", "sale"), F("inStock", "ne", false), F("brand name", "in", ["Acme", "Nord"])], "some"],
  ["gte, lt and nin", [F("price", "gte", 20), F("price", "lt", 100), F("colour", "nin", ["black"])], "some"],
  ["exists false and eq", [F("a.b", "exists", false), F("tags", "eq", 0)], "some"],
  // injection attempts: values
  ['a value `" or 1 or "`', [F("colour", "eq", '" or 1 or "')], "none"],
  ["a value `) or (`", [F("colour", "eq", ") or (")], "none"],
  ["a value closing a single quote", [F("colour", "eq", "red' or 1 or 'red")], "none"],
  ["a value closing a double quote", [F("colour", "eq", 'red" or "1" == "1')], "none"],
  ["a lone backslash", [F("colour", "eq", "\\")], "none"],
  ["a trailing backslash", [F("colour", "in", ["red\\", "blue"])], "some"],
  ["a newline", [F("colour", "eq", "red\nor 1")], "none"],
  ["a NUL", [F("colour", "eq", "red\u0000 or 1")], "none"],
  ["an injection in ne matches everyone", [F("colour", "ne", '" or 1 or "')], 300],
  ...TRICKY.map((label): [string, Filter[], number] => [`a label ${JSON.stringify(label)} stored and matched exactly`, [F("label", "eq", label)], 1]),
  ["every tricky label at once", [F("label", "in", TRICKY)], TRICKY.length],
  // injection attempts: field names
  ["a field that reads like an expression", [F('colour == "red" or 1', "eq", "red")], "none"],
  ["a field with a leading dot", [F(".colour", "eq", "red")], "none"],
  ["a field with a parenthesis", [F("colour) or (1", "exists", false)], 300],
  ["a field with quotes", [F('x" or 1 or "', "ne", "a")], 300],
  ["a field with a newline", [F("colour\n", "eq", "red")], "none"],
  ["a field with a backslash", [F("colour\\", "exists", true)], "none"],
];

describe.each([
  { path: "exact scans", env: {} as Record<string, string>, hnsw: false },
  { path: "HNSW (SEARCH_EXACT_UP_TO=0)", env: { SEARCH_EXACT_UP_TO: "0" }, hnsw: true },
  // The postings answer eq/in filters with their candidates, scored exactly (the rest of the
  // filters checked by the service), or mark the post-filtered hits that fail them.
  { path: "HNSW with filter postings", env: { SEARCH_EXACT_UP_TO: "0", SEARCH_FILTER_POSTINGS: "on" }, hnsw: true },
])("filters via $path", ({ env, hnsw }) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture(env);
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  it("has a catalog whose metadata the reference sees as designed", () => {
    const all = (filters: Filter[]) => f.indexed.filter((p) => reference(filters, { ...p.metadata, rank: p.rank })).length;
    expect(all([F("rare", "eq", true)])).toBe(3);
    expect(all([F("group", "eq", "forty")])).toBe(40);
    // Without these, "eq" and "exists" could not be told apart, nor a path from a key.
    expect(all([F("inStock", "exists", true)])).toBeGreaterThan(all([F("inStock", "in", [true, false])]));
    expect(all([F("a.b", "eq", 1)])).toBeGreaterThan(0);
    expect(f.indexed.some((p) => (p.metadata.a as JsonRecord | undefined)?.b === 1)).toBe(true);
  });

  it.each(CASES)("%s", async (name, filters, matching) => {
    const counts = await check(f, filters, name);
    const total = f.indexed.filter((p) => reference(filters, { ...p.metadata, rank: p.rank })).length;
    if (matching === "none") expect(total).toBe(0);
    else if (matching === "some") expect(total).toBeGreaterThan(0);
    else expect(total).toBe(matching);
    // Recommendations see every product but the subject: a case matching anything must show some.
    if (total > 1) expect(counts.recs).toBeGreaterThan(0);
  });

  it.each([
    ["/search", "eq", { a: 1 }, /filters\[1\]\.value must be a string, number or boolean for operator "eq"/],
    ["/recs", "ne", null, /filters\[1\]\.value must be a string, number or boolean/],
    ["/search", "eq", ["red"], /filters\[1\]\.value must be a string, number or boolean/],
    ["/recs", "gt", true, /filters\[1\]\.value must be a number or a string for operator "gt"/],
    ["/search", "lte", ["1"], /filters\[1\]\.value must be a number or a string/],
    ["/recs", "in", "red", /filters\[1\]\.value must be an array of strings or numbers for operator "in"/],
    ["/search", "nin", [], /filters\[1\]\.value must be a non-empty array/],
    ["/recs", "in", [true], /filters\[1\]\.value\[0\] must be a string or a finite number/],
    ["/search", "in", ["a", ["x"]], /filters\[1\]\.value\[1\] must be a string or a finite number/],
    ["/recs", "nin", Array.from({ length: 101 }, (_, i) => i), /filters\[1\]\.value must be an array of at most 100 items/],
    ["/search", "exists", "true", /filters\[1\]\.value must be a boolean for operator "exists"/],
    ["/recs", "exists", 1, /filters\[1\]\.value must be a boolean/],
  ])("%s rejects %s with a %j value: 400 naming filters[1]", async (path, operator, value, message) => {
    const filters = [F("colour", "eq", "red"), { field: "price", operator, value }];
    const body = path === "/search" ? searchBody(f, filters, 5) : recsBody(f, filters, 5);
    const res = await f.s.api.post(path, body);
    expectErrorObject(res, 400, "POST", path);
    expect(res.body.message).toMatch(message);
  });

  it.each([
    ["no value", { field: "price", operator: "eq" }, /filters\[2\]\.value is required for operator "eq"/],
    ["a blank field", { field: "   ", operator: "eq", value: 1 }, /filters\[2\]\.field is required/],
    ["an over-long field", { field: "f".repeat(129), operator: "eq", value: 1 }, /filters\[2\]\.field must be at most 128 characters/],
    ["an unknown operator", { field: "price", operator: "like", value: 1 }, /filters\[2\]/],
  ])("rejects %s with 400 naming filters[2], on /search and /recs", async (_name, bad, message) => {
    const filters = [F("colour", "eq", "red"), F("price", "gt", 1), bad];
    for (const path of ["/search", "/recs"]) {
      const res = await f.s.api.post(path, path === "/search" ? searchBody(f, filters, 5) : recsBody(f, filters, 5));
      expectErrorObject(res, 400, "POST", path);
      expect(res.body.message).toMatch(message);
    }
  });

  it("rejects more than 32 filters and accepts 32", async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => F("price", "ne", -i));
    const over = await f.s.api.post("/search", searchBody(f, many(33), 5));
    expectErrorObject(over, 400, "POST", "/search");
    expect(over.body.message).toMatch(/filters must have at most 32 items/);
    const ok = await f.s.api.post("/recs", recsBody(f, many(32), 5));
    expect(ok.status).toBe(200);
    expectHits(ok.body.results, expectedRecs(f, many(32), 5));
  });

  describe.runIf(hnsw)("selective filters, where an approximate filtered search may stop early", () => {
    // With postings the filter's 3 candidates are scored at once: no search comes up short.
    it.runIf(!env.SEARCH_FILTER_POSTINGS)("scans a filter at once once its approximate search came up short twice in a row, and tries HNSW again now and then", async () => {
      // A filter of its own (no other test asks it): 3 of 300 pass, fewer than the 20 asked.
      const body = searchBody(f, [F("rare", "eq", true), F("price", "gte", 0)], 10);
      const asked = await searchesOf(f, body, SHORT_BEFORE_SCAN + SCAN_PROBE_EVERY + 1);
      const short = ["hnsw", "scan"];
      expect(asked.slice(0, SHORT_BEFORE_SCAN)).toEqual(Array(SHORT_BEFORE_SCAN).fill(short));
      // Scanned at once, but for the probe, which finds it still short.
      const probe = SHORT_BEFORE_SCAN + SCAN_PROBE_EVERY - 1;
      asked.slice(SHORT_BEFORE_SCAN).forEach((a, k) => expect(a, `search ${SHORT_BEFORE_SCAN + k}`).toEqual(SHORT_BEFORE_SCAN + k === probe ? short : ["scan"]));
    });

    // Without postings, an eq/in filter asked again is learned (SEARCH_FILTER_LEARNING, on by default).
    // Its matches are named by MySQL's facets, not scanned for (a scan learns them where the
    // facets cannot tell: test/search/learned-filters.test.ts, an index without them).
    it.runIf(!env.SEARCH_FILTER_POSTINGS)("learns an eq/in filter on its second search from the products MySQL names, no scan beside it, and answers it exactly from memory after, with no VSIM", async () => {
      // A filter of its own (no other test asks it): the 40 products of group "forty", 13% of the
      // catalog, too many to be named at its first search (as a filter few pass is).
      const body = searchBody(f, [F("group", "in", ["forty", "learned-filter-test"])], 10);
      const learnedBefore = await learnings(f, "learned");
      const asked = await searchesOf(f, body, 4);
      expect(asked.slice(0, 2)).toEqual([["hnsw"], ["hnsw"]]);
      expect(asked.slice(2)).toEqual([[], []]);
      // Operators see it in /metrics.
      expect(await learnings(f, "learned")).toBe(learnedBefore + 1);
    });

    /** Subjects of /recs that see the rare products deep in their ranking, so the index must dig. */
    function deepSubject(): string {
      let best = { id: "", depth: -1 };
      for (const p of f.indexed.slice(0, 60)) {
        if (RARE.includes(Number(p.id.slice(4)))) continue;
        const order = ids(expectedRecs(f, [], COUNT, p.id));
        const depth = Math.min(...RARE.map((i) => order.indexOf(`sku-${i}`)));
        if (depth > best.depth) best = { id: p.id, depth };
      }
      expect(best.depth, "the rare products rank far from the subject").toBeGreaterThan(60);
      return best.id;
    }

    it.each([
      ["pushed down to Redis", [F("rare", "eq", true)]],
      ["post-filter only (field with a space)", [F("rare flag", "eq", "yes")]],
    ])("returns all 3 of 3 matches for topK 10 when the filter is %s", async (_name, filters) => {
      const subject = deepSubject();
      const recs = await f.s.api.post("/recs", recsBody(f, filters, 10, subject));
      expect(recs.status).toBe(200);
      const expected = expectedRecs(f, filters, 10, subject);
      expect(expected).toHaveLength(3);
      expectHits(recs.body.results, expected);

      // Search: every rare product with a score above the threshold.
      const found: number[] = [];
      for (const query of [QUERY, "brown boots", "white sneakers"]) {
        const res = await f.s.api.post("/search", searchBody(f, filters, 10, query));
        expect(res.status).toBe(200);
        const expectedHits = expectedSearch(f, filters, 10, query);
        expectHits(res.body.results, expectedHits, query);
        found.push(expectedHits.length);
      }
      expect(found, "some query scores all 3 above the threshold").toContain(3);
    });

    it.each([
      ["pushed down to Redis", [F("group", "eq", "forty")]],
      ["post-filter only (field with a space)", [F("group name", "eq", "forty")]],
    ])("returns exactly the exact top 10 of 40 matches when the filter is %s", async (_name, filters) => {
      for (const subject of ["sku-1", "sku-50", "sku-99"]) {
        const recs = await f.s.api.post("/recs", recsBody(f, filters, 10, subject));
        const expected = expectedRecs(f, filters, 10, subject);
        expect(expected).toHaveLength(10);
        expectHits(recs.body.results, expected, subject);
      }
      for (const query of [QUERY, "black leather handbag", "green summer top"]) {
        const res = await f.s.api.post("/search", searchBody(f, filters, 10, query));
        const expected = expectedSearch(f, filters, 10, query);
        expect(expected.length).toBeGreaterThan(0);
        expectHits(res.body.results, expected, query);
      }
    });

    it("gives the same answers over gRPC as over REST, filters included", async () => {
      const grpc = createGrpcTransport({ baseUrl: f.s.server.grpcUrl });
      const key = await f.s.server.createKey(f.s.org);
      const auth = { headers: { service_api_key: key } };
      const filters: Filter[] = [F("brand name", "in", ["Acme", "Nord"]), F("tags", "ne", "sale"), F("price", "lt", 250)];
      const asProto = filters.map((x) => ({ field: x.field, operator: Filter_Operator[x.operator], value: fromJson(ValueSchema, x.value) }));

      const search = await createClient(SearchService, grpc).searchProducts(
        { organizationId: f.s.org, catalogId: f.catalogId, query: QUERY, topK: 20, visualWeight: SEARCH_WEIGHT, similarityThreshold: 0, filters: asProto },
        auth,
      );
      const expected = expectedSearch(f, filters, 20);
      expect(expected.length).toBeGreaterThan(5);
      expectHits(search.results, expected, "gRPC search");
      const rest = await f.s.api.post("/search", searchBody(f, filters, 20));
      expect(search.results.map((r) => [r.productId, r.score, r.metadata])).toEqual(
        rest.body.results.map((r: Hit) => [r.productId, r.score, r.metadata]),
      );

      const recs = await createClient(RecommendationService, grpc).getRecommendations(
        { organizationId: f.s.org, catalogId: f.catalogId, productId: SUBJECT, topK: 20, visualWeight: RECS_WEIGHT, filters: asProto },
        auth,
      );
      expectHits(recs.results, expectedRecs(f, filters, 20), "gRPC recs");
      const restRecs = await f.s.api.post("/recs", recsBody(f, filters, 20));
      expect(recs.results.map((r) => [r.productId, r.score, r.metadata])).toEqual(
        restRecs.body.results.map((r: Hit) => [r.productId, r.score, r.metadata]),
      );
    });
  });
});

describe("a filter so rare that a walk would come up short, asked first of a catalog its sample does not hold whole", () => {
  let f: Fixture;
  beforeAll(async () => {
    // 1,200 products: the index's sample of a set is 1,000 of its elements (filter-shares.ts).
    f = await fixture({ SEARCH_EXACT_UP_TO: "0" }, 1200);
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  /** An eq filter on a price one product holds, the `n`th from the catalog's middle. */
  function oneProductPrice(n: number): Filter[] {
    const i = Array.from({ length: 600 }, (_, k) => 300 + k).filter((k) => typeof metadataOf(k).price === "number")[n]!;
    const filters = [F("price", "eq", metadataOf(i).price as number)];
    expect(f.indexed.filter((p) => reference(filters, p.metadata)).map((p) => p.id)).toEqual([`sku-${i}`]);
    return filters;
  }

  it("is scanned at once on its first search (the sample finds at most two of 1,000 pass it), walked once more, and scanned at once after coming up short", async () => {
    // The set's size (any answer tells it), then its sample (read beside a filtered search).
    await searchesOf(f, searchBody(f, [], 10), 1);
    expect(await searchesOf(f, searchBody(f, [F("colour", "eq", "red")], 10), 1)).toEqual([["hnsw"]]);
    // One product (sku-1198, priced 1,208.5); a range, which is never learned, so every search is the index's.
    const rare = [F("price", "gt", 1208)];
    expect(expectedSearch(f, rare, 10).map((h) => h.productId)).toEqual(["sku-1198"]);
    expect(await searchesOf(f, searchBody(f, rare, 10), 3)).toEqual([["scan"], ["hnsw", "scan"], ["scan"]]);
    // A filter many pass is walked as before.
    expect(await searchesOf(f, searchBody(f, [F("colour", "eq", "blue")], 10), 1)).toEqual([["hnsw"]]);
  });

  it("of eq/in filters only, is answered from the products MySQL's facets name, as any filter few pass: no VSIM at its first search, nor after", async () => {
    // A catalog indexed before the facets existed (as their migration marks one; no search has
    // named its products yet): MySQL cannot tell until it wrote them from the products table, and
    // the search goes on as without them. Those also name a product the index does not hold
    // (posted, never processed): looked for, and left out, as a scan would leave it out.
    const { app } = f.s.server;
    await app.mysql.db.update(catalogs).set({ facetsComplete: false }).where(eq(catalogs.id, f.catalogId));
    // The set's sample, read beside a filtered search (one many pass, walked; its first search, so
    // not learned, which would ask MySQL and start writing the facets).
    await searchesOf(f, searchBody(f, [F("colour", "eq", "green")], 10), 1);
    const [late] = syntheticProducts(text, 1, { seed: 5, idOf: () => "sku-late", metadataOf: () => ({ price: 1110 }) });
    await postProducts(f.s, f.catalogId, [late!]);
    const lateOne = [F("price", "eq", 1110)];
    expect(expectedSearch(f, lateOne, 10).map((h) => h.productId)).toEqual(["sku-1100"]);
    expect(await searchesOf(f, searchBody(f, lateOne, 10), 1)).toEqual([["scan"]]);
    await app.searchIndex.facets.settled();
    expect(await app.searchIndex.facets.productsWith(f.catalogId, [[facetToken("price", 1110)]], 10)).toEqual(expect.arrayContaining(["sku-1100", "sku-late"]));
    expect(await searchesOf(f, searchBody(f, lateOne, 10), 1)).toEqual([[]]);

    // Prices held by one product each (sku-1198, sku-1100).
    const one = [F("price", "eq", 1208.5)];
    const two = [F("price", "in", [1208.5, 1110])];
    expect(expectedSearch(f, one, 10).map((h) => h.productId)).toEqual(["sku-1198"]);
    expect(expectedSearch(f, two, 10)).toHaveLength(2);
    expect(await searchesOf(f, searchBody(f, one, 10), 2)).toEqual([[], []]);
    expect(await searchesOf(f, searchBody(f, two, 10), 1)).toEqual([[]]);
    // Passed by 3 of 1,200, which the sample may find too many to call rare, but few (at most 2% of
    // the set, and 500 products): named whatever the sample's count.
    const few = [F("rare", "eq", true)];
    expect(expectedSearch(f, few, 10).length).toBeGreaterThan(0);
    expect(await searchesOf(f, searchBody(f, few, 10), 1)).toEqual([[]]);
    // Deleted, a product leaves the index and its facets by the time DELETE answers (the last check
    // of this catalog: its reference still holds the product).
    const price = [[facetToken("price", 1208.5)]];
    expect(await app.searchIndex.facets.productsWith(f.catalogId, price, 10)).toEqual(["sku-1198"]);
    expect((await f.s.api.delete(`${productsPath(f.s, f.catalogId)}/sku-1198`)).status).toBe(200);
    expect(await app.searchIndex.facets.productsWith(f.catalogId, price, 10)).toEqual([]);
  });

  it("split in two, names each part its own products of a filter few pass: no VSIM in either", async () => {
    const admin = restClient(f.s.server.restUrl, f.s.server.adminKey);
    const res = await admin.post(`/organizations/${f.s.org}/catalogs/${f.catalogId}/reindex`, { parts: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.parts).toBe(2);
    // Each part's size, and no sample yet: a filter one product passes is walked in both parts,
    // each short, and each part's scan replaced by reading what MySQL names of it (none in one).
    await searchesOf(f, searchBody(f, [], 10), 1);
    expect(await searchesOf(f, searchBody(f, oneProductPrice(1), 10), 2)).toEqual([["hnsw", "hnsw"], []]);
    // Each part's sample, read beside a filtered search (walked in both).
    await searchesOf(f, searchBody(f, [F("colour", "eq", "blue")], 10), 1);
    // Four prices held by one product each (sku-1000, sku-1100, sku-1104, sku-1108), over both parts.
    const four = [F("price", "in", [1010, 1110, 1114, 1118])];
    expect(expectedSearch(f, four, 10).length).toBeGreaterThan(1);
    expect(await searchesOf(f, searchBody(f, four, 10), 2)).toEqual([[], []]);
  });
});

describe("filters few pass, asked in turn past the held sets' room", () => {
  let f: Fixture;
  beforeAll(async () => {
    // Room for 24 held candidates: eight sets of three (a learned set holds at most an eighth: 3).
    f = await fixture({ SEARCH_EXACT_UP_TO: "0", SEARCH_HOLDER_CACHE: "24" }, 1200);
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  it("are answered from the products MySQL names, held while there is room, and from their reads alone after: no VSIM", async () => {
    // The set's sample, read beside a filtered search (one many pass, walked).
    await searchesOf(f, searchBody(f, [F("colour", "eq", "red")], 10), 1);
    // Three prices each, one product each (prices are unique but for a few strings and gaps).
    const priced = Array.from({ length: 1200 }, (_, i) => i).filter((i) => i >= 600 && typeof metadataOf(i).price === "number");
    const filterOf = (k: number) => [F("price", "in", priced.slice(3 * k, 3 * k + 3).map((i) => metadataOf(i).price as number))];
    const [named, notHeld] = [await learnings(f, "named"), await learnings(f, "named_not_held")];
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 8; k++) expect(await searchesOf(f, searchBody(f, filterOf(k), 10), 1), `filter ${k}, round ${round}`).toEqual([[]]);
    }
    expect(await learnings(f, "named")).toBe(named + 8);
    // A ninth, asked less often than the eight held: no room for it, each search answered from its reads.
    expect(await searchesOf(f, searchBody(f, filterOf(8), 10), 2)).toEqual([[], []]);
    expect(await learnings(f, "named_not_held")).toBe(notHeld + 2);
    expect(await learnings(f, "named")).toBe(named + 8);
  });
});

describe("filters too many pass to name at their first ask, learned in turn past the held sets' room", () => {
  let f: Fixture;
  beforeAll(async () => {
    // Room for 400 held candidates: a learned set holds at most an eighth, 50; eight sets of 48.
    f = await fixture({ SEARCH_EXACT_UP_TO: "0", SEARCH_HOLDER_CACHE: "400" }, 1200);
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  it("are learned while there is room; one the sample finds would not fit is not, and MySQL is not asked for its products", async () => {
    // The set's sample, read beside a filtered search (one many pass, walked).
    await searchesOf(f, searchBody(f, [F("colour", "eq", "red")], 10), 1);
    // 48 prices each, one product each: 4% of the set, past what is named at a first ask.
    const priced = Array.from({ length: 1200 }, (_, i) => i).filter((i) => typeof metadataOf(i).price === "number");
    const filterOf = (k: number) => [F("price", "in", priced.slice(48 * k, 48 * k + 48).map((i) => metadataOf(i).price as number))];
    const [learned, noRoom] = [await learnings(f, "learned"), await learnings(f, "no_room")];
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 9; k++) await searchesOf(f, searchBody(f, filterOf(k), 10), 1);
    }
    // The eight asked first, learned at their second ask, fill the room; the ninth, asked as often,
    // would push none of them out, so it is walked each time without a learning's read.
    expect(await learnings(f, "learned")).toBe(learned + 8);
    expect(await learnings(f, "no_room")).toBe(noRoom);
    for (let k = 0; k < 8; k++) expect(await searchesOf(f, searchBody(f, filterOf(k), 10), 1), `filter ${k}`).toEqual([[]]);
    expect((await searchesOf(f, searchBody(f, filterOf(8), 10), 1)).flat()).toContain("hnsw");
  });
});

describe("an eq filter few pass, asked before the set's sample is read", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture({ SEARCH_EXACT_UP_TO: "0" });
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  it("is walked, and the scan its short walk asks for is replaced by reading the products MySQL names", async () => {
    // The set's size (any answer tells it), and no sample yet (this catalog's first filtered
    // search): the filter is not named at its first ask, and its walk comes up short (1 of the 20
    // asked). Its scan would read 300 elements, and reading the one product MySQL names costs less.
    await searchesOf(f, searchBody(f, [], 10), 1);
    const named = await learnings(f, "named");
    const single = [F("price", "eq", metadataOf(150).price as number)];
    expect(f.indexed.filter((p) => reference(single, p.metadata)).map((p) => p.id)).toEqual(["sku-150"]);
    expect(await searchesOf(f, searchBody(f, single, 10), 2)).toEqual([["hnsw"], []]);
    // Held from its reads, and answered from them after.
    expect(await learnings(f, "named")).toBe(named + 1);
  });
});

describe("two filters, each passed by more products than a learned set holds", () => {
  let f: Fixture;
  beforeAll(async () => {
    // Room for 24 held candidates: a learned set holds at most an eighth, 3.
    f = await fixture({ SEARCH_EXACT_UP_TO: "0", SEARCH_HOLDER_CACHE: "24" });
  }, 180_000);
  afterAll(async () => {
    await f?.s.server.close();
  });

  it("passed together by three products: learned by a scan beside a search (MySQL could not name them), then answered with no VSIM", async () => {
    // Group "forty" (40 products) and colour red (27): each passed by more than a learned set
    // holds here (3), so MySQL could not name the three that pass both (it is not asked, as its
    // sample tells); the learning scans for them.
    const both = [F("group", "eq", "forty"), F("colour", "eq", "red")];
    expect(f.indexed.filter((p) => reference(both, p.metadata)).map((p) => p.id)).toEqual(["sku-58", "sku-135", "sku-212"]);
    const [learnedBefore, tooManyBefore] = [await learnings(f, "learned"), await learnings(f, "too_many")];
    // The set's size (any answer tells it), which learning and the sample's estimates need.
    await searchesOf(f, searchBody(f, [], 10), 1);
    const asked = await searchesOf(f, searchBody(f, both, 10), 4);
    // Learned by its second ask of the index (the first search's walk may come up short and ask again).
    expect(asked.slice(0, 2).flat()).toContain("scan");
    expect(asked.slice(2)).toEqual([[], []]);
    expect(await learnings(f, "learned")).toBe(learnedBefore + 1);
    expect(await learnings(f, "too_many")).toBe(tooManyBefore);
  });
});
