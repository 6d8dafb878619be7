import { describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../catalogs/model.js";
import { AppError } from "../errors/index.js";
import { MAX_FILTERS, matchesFilters, parseFilters, type MetadataFilter } from "./filters.js";

const product: JsonObject = {
  rank: "BOOST",
  color: "red",
  price: 25,
  zero: 0,
  negative: -3.5,
  onSale: true,
  discontinued: false,
  released: "2024-03-15T10:00:00Z",
  tags: ["summer", "sale", 42],
  sizes: [38, 40, 42.5],
  nested: [["red"], { color: "red" }],
  empty: [],
  note: null,
  dims: { w: 10, h: 20 },
  name: "Crème brûlée 😀",
  "weird key.with dots": "yes",
  numericString: "25",
};

/** Parses one raw filter and matches it against `attrs`. */
const match = (field: string, operator: string, value: JsonValue, attrs: JsonObject = product) =>
  matchesFilters(parseFilters([{ field, operator, value }]), attrs);

describe("matchesFilters: eq and ne", () => {
  it.each<[string, JsonValue, boolean]>([
    ["color", "red", true],
    ["color", "Red", false], // case-sensitive
    ["color", "red ", false],
    ["price", 25, true],
    ["price", 25.0, true],
    ["price", "25", false], // same JSON type only
    ["numericString", 25, false],
    ["numericString", "25", true],
    ["zero", -0, true], // numerically
    ["onSale", true, true],
    ["onSale", 1, false],
    ["onSale", "true", false],
    ["discontinued", false, true],
    ["discontinued", 0, false],
    ["tags", "sale", true], // array element
    ["tags", 42, true],
    ["tags", "42", false],
    ["tags", "summer sale", false],
    ["sizes", 42.5, true],
    ["nested", "red", false], // nested arrays and objects are not searched
    ["empty", "x", false],
    ["note", "null", false],
    ["dims", 10, false],
    ["missing", "red", false],
    ["name", "Crème brûlée 😀", true], // unicode, exact
    ["name", "Creme brulee 😀", false],
    ["weird key.with dots", "yes", true], // any characters; no dotted paths
    ["rank", "BOOST", true],
  ])("%s eq %j -> %s", (field, value, expected) => {
    expect(match(field, "eq", value)).toBe(expected);
    expect(match(field, "ne", value)).toBe(!expected);
  });

  it("ne matches products lacking the field, or holding null", () => {
    expect(match("missing", "ne", "red")).toBe(true);
    expect(match("note", "ne", 0)).toBe(true);
  });

  it("does not follow dotted paths into objects", () => {
    expect(match("dims.w", "eq", 10)).toBe(false);
    expect(match("dims.w", "exists", true)).toBe(false);
  });

  it("finds only own keys, never Object.prototype's", () => {
    expect(match("constructor", "exists", true, {})).toBe(false);
    expect(match("toString", "ne", "x", {})).toBe(true);
    expect(match("__proto__", "exists", true, {})).toBe(false);
    const own = JSON.parse('{"__proto__": "p", "constructor": 1}') as JsonObject;
    expect(match("__proto__", "eq", "p", own)).toBe(true);
    expect(match("constructor", "eq", 1, own)).toBe(true);
  });
});

describe("matchesFilters: gt, gte, lt, lte", () => {
  it.each<[string, string, JsonValue, boolean]>([
    ["price", "gt", 24.99, true],
    ["price", "gt", 25, false],
    ["price", "gte", 25, true],
    ["price", "lt", 25, false],
    ["price", "lte", 25, true],
    ["negative", "lt", -3, true],
    ["negative", "gt", -4, true],
    ["zero", "gte", -0, true],
    ["price", "gt", "1", false], // a number field never compares with a string value
    ["numericString", "gt", 1, false], // nor a string field with a number value
    ["numericString", "gt", "1", true], // strings compare by code unit: "25" > "1"
    ["numericString", "lt", "3", true], // ... so "25" < "3"
    ["released", "gte", "2024-03-15", true], // ISO dates
    ["released", "lt", "2024-03-15T10:00:01Z", true],
    ["released", "gt", "2025", false],
    ["color", "gt", "Red", true], // "r" (0x72) > "R" (0x52)
    ["name", "gt", "Crème", true],
    ["name", "lt", "Crèmf", true],
    ["sizes", "gt", 1, false], // arrays never compare
    ["tags", "lt", "zzz", false],
    ["onSale", "gt", 0, false], // booleans never compare
    ["note", "lt", 1, false],
    ["dims", "gt", 0, false],
    ["missing", "gt", 0, false],
    ["missing", "lte", "z", false],
  ])("%s %s %j -> %s", (field, op, value, expected) => {
    expect(match(field, op, value)).toBe(expected);
  });

  it("orders strings by UTF-16 code unit, not by locale", () => {
    // U+1F600 is a surrogate pair (0xD83D...), which sorts below U+FF5E.
    expect(match("s", "lt", "～", { s: "😀" })).toBe(true);
    expect(match("s", "gt", "z", { s: "é" })).toBe(true);
  });
});

describe("matchesFilters: in and nin", () => {
  it.each<[string, JsonValue[], boolean]>([
    ["color", ["blue", "red"], true],
    ["color", ["blue", "green"], false],
    ["price", [1, 25], true],
    ["price", ["25"], false],
    ["tags", ["winter", "summer"], true], // array fields match when they intersect
    ["tags", [42], true],
    ["tags", ["winter"], false],
    ["sizes", [40], true],
    ["onSale", [1, "true"], false],
    ["note", ["null"], false],
    ["missing", ["red"], false],
    ["name", ["x", "Crème brûlée 😀"], true],
  ])("%s in %j -> %s", (field, value, expected) => {
    expect(match(field, "in", value)).toBe(expected);
    expect(match(field, "nin", value)).toBe(!expected);
  });

  it("nin matches products lacking the field", () => {
    expect(match("missing", "nin", ["a", 1])).toBe(true);
  });
});

describe("matchesFilters: exists", () => {
  it.each<[string, boolean]>([
    ["color", true],
    ["note", true], // present even when null
    ["empty", true],
    ["dims", true],
    ["discontinued", true],
    ["zero", true],
    ["missing", false],
  ])("%s exists -> %s", (field, present) => {
    expect(match(field, "exists", true)).toBe(present);
    expect(match(field, "exists", false)).toBe(!present);
  });

  it("sees an empty-string value as present", () => {
    expect(match("s", "exists", true, { s: "" })).toBe(true);
  });
});

describe("matchesFilters: combinations", () => {
  it("ANDs every filter; no filters match everything", () => {
    expect(matchesFilters([], product)).toBe(true);
    expect(matchesFilters([], {})).toBe(true);
    const filters: MetadataFilter[] = [
      { field: "color", operator: "eq", value: "red" },
      { field: "price", operator: "lt", value: 30 },
      { field: "missing", operator: "exists", value: false },
    ];
    expect(matchesFilters(filters, product)).toBe(true);
    expect(matchesFilters([...filters, { field: "tags", operator: "nin", value: ["sale"] }], product)).toBe(false);
  });
});

describe("parseFilters", () => {
  it("returns well-typed filters for valid input", () => {
    expect(
      parseFilters([
        { field: "a", operator: "eq", value: true },
        { field: "b", operator: "gte", value: "2024" },
        { field: "c", operator: "nin", value: [1, "x"] },
        { field: "d", operator: "exists", value: false },
        { field: "x".repeat(128), operator: "ne", value: 0 },
        { field: " spaced ", operator: "lt", value: -1.5 },
      ]),
    ).toEqual([
      { field: "a", operator: "eq", value: true },
      { field: "b", operator: "gte", value: "2024" },
      { field: "c", operator: "nin", value: [1, "x"] },
      { field: "d", operator: "exists", value: false },
      { field: "x".repeat(128), operator: "ne", value: 0 },
      { field: " spaced ", operator: "lt", value: -1.5 },
    ]);
    expect(parseFilters([])).toEqual([]);
    expect(parseFilters(Array.from({ length: MAX_FILTERS }, () => ({ field: "f", operator: "exists", value: true })))).toHaveLength(
      MAX_FILTERS,
    );
  });

  const ok = { field: "ok", operator: "exists", value: true };
  it.each<[string, { field: string; operator: string; value: JsonValue | undefined }, string]>([
    ["empty field", { field: "", operator: "eq", value: 1 }, "filters[1].field is required and must not be blank"],
    ["blank field", { field: " \t", operator: "eq", value: 1 }, "filters[1].field is required and must not be blank"],
    ["long field", { field: "x".repeat(129), operator: "eq", value: 1 }, "filters[1].field must be at most 128 characters"],
    ["unknown operator", { field: "f", operator: "like", value: "x" }, 'filters[1].operator must be one of eq, ne, gt, gte, lt, lte, in, nin, exists; got "like"'],
    ["operator case", { field: "f", operator: "EQ", value: "x" }, "filters[1].operator must be one of"],
    ["empty operator", { field: "f", operator: "", value: "x" }, "filters[1].operator must be one of"],
    ["missing value", { field: "f", operator: "eq", value: undefined }, 'filters[1].value is required for operator "eq"'],
    ["missing exists value", { field: "f", operator: "exists", value: undefined }, 'filters[1].value is required for operator "exists"'],
    ["eq null", { field: "f", operator: "eq", value: null }, 'filters[1].value must be a string, number or boolean for operator "eq"'],
    ["eq array", { field: "f", operator: "eq", value: ["a"] }, 'filters[1].value must be a string, number or boolean for operator "eq"'],
    ["ne object", { field: "f", operator: "ne", value: { a: 1 } }, 'filters[1].value must be a string, number or boolean for operator "ne"'],
    ["eq NaN", { field: "f", operator: "eq", value: Number.NaN }, 'filters[1].value must be a finite number for operator "eq"'],
    ["gt Infinity", { field: "f", operator: "gt", value: Number.POSITIVE_INFINITY }, 'filters[1].value must be a finite number for operator "gt"'],
    ["gt boolean", { field: "f", operator: "gt", value: true }, 'filters[1].value must be a number or a string for operator "gt"'],
    ["gte null", { field: "f", operator: "gte", value: null }, 'filters[1].value must be a number or a string for operator "gte"'],
    ["lt array", { field: "f", operator: "lt", value: [1] }, 'filters[1].value must be a number or a string for operator "lt"'],
    ["lte object", { field: "f", operator: "lte", value: {} }, 'filters[1].value must be a number or a string for operator "lte"'],
    ["in scalar", { field: "f", operator: "in", value: "a" }, 'filters[1].value must be an array of strings or numbers for operator "in"'],
    ["nin null", { field: "f", operator: "nin", value: null }, 'filters[1].value must be an array of strings or numbers for operator "nin"'],
    ["in empty", { field: "f", operator: "in", value: [] }, 'filters[1].value must be a non-empty array of strings or numbers for operator "in"'],
    ["in too long", { field: "f", operator: "in", value: Array.from({ length: 101 }, (_, i) => i) }, 'filters[1].value must be an array of at most 100 items for operator "in"'],
    ["in boolean item", { field: "f", operator: "in", value: ["a", true] }, 'filters[1].value[1] must be a string or a finite number for operator "in"'],
    ["nin null item", { field: "f", operator: "nin", value: [null] }, 'filters[1].value[0] must be a string or a finite number for operator "nin"'],
    ["in nested array", { field: "f", operator: "in", value: [["a"]] }, 'filters[1].value[0] must be a string or a finite number for operator "in"'],
    ["in object item", { field: "f", operator: "in", value: [1, 2, { a: 1 }] }, 'filters[1].value[2] must be a string or a finite number for operator "in"'],
    ["in NaN item", { field: "f", operator: "in", value: [Number.NaN] }, 'filters[1].value[0] must be a string or a finite number for operator "in"'],
    ["exists string", { field: "f", operator: "exists", value: "true" }, 'filters[1].value must be a boolean for operator "exists"'],
    ["exists number", { field: "f", operator: "exists", value: 1 }, 'filters[1].value must be a boolean for operator "exists"'],
    ["exists null", { field: "f", operator: "exists", value: null }, 'filters[1].value must be a boolean for operator "exists"'],
  ])("rejects %s, naming the item", (_, bad, message) => {
    let caught: unknown;
    try {
      parseFilters([ok, bad, ok]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).kind).toBe("invalid_argument");
    expect((caught as AppError).message).toContain(message);
  });

  it("rejects more than MAX_FILTERS filters", () => {
    const many = Array.from({ length: MAX_FILTERS + 1 }, () => ok);
    expect(() => parseFilters(many)).toThrow(new AppError("invalid_argument", `filters must have at most ${MAX_FILTERS} items; got ${MAX_FILTERS + 1}`));
  });

  it("rejects a field that is not a string at run time", () => {
    const bad = { field: undefined as unknown as string, operator: "eq", value: 1 };
    expect(() => parseFilters([bad])).toThrow("filters[0].field is required and must not be blank");
  });
});
