/**
 * Metadata filters of search and recommendations: validation and the exact matching rule.
 *
 * A request carries `filters: {field, operator, value}[]`; a product passes when it passes every
 * filter (AND). Filters see the product's metadata with key `rank` set to its rank
 * ("NO_BOOST" | "BOOST" | "SUPER_BOOST"). Semantics follow MongoDB's:
 *
 * | operator        | value                                          | a product matches when                                                                                                    |
 * |-----------------|------------------------------------------------|---------------------------------------------------------------------------------------------------------------------------|
 * | `eq`            | string, number or boolean                      | the field's value equals it (same JSON type; strings exact and case-sensitive, numbers numerically), or the field is an array with an element equal to it |
 * | `ne`            | string, number or boolean                      | `eq` does not match: products lacking the field match                                                                     |
 * | `gt` `gte` `lt` `lte` | number or string                         | the field's value is a scalar of the value's type and compares so: numbers numerically, strings by UTF-16 code unit (so ISO 8601 dates in one format compare by time). Arrays, other types and missing fields never match |
 * | `in`            | 1 to 100 strings and/or numbers                | `eq` matches for at least one item (an array field matches when it shares an item)                                        |
 * | `nin`           | 1 to 100 strings and/or numbers                | `in` does not match: products lacking the field match                                                                     |
 * | `exists`        | boolean                                        | `true`: the key is present, even when its value is null; `false`: the key is absent                                       |
 *
 * - `field` names a top-level metadata key exactly: 1 to 128 characters, any characters, not blank.
 *   There are no dotted paths: `"a.b"` is the key `a.b`, not key `b` inside object `a`.
 * - Never equal to any filter value: null, objects, and array elements that are arrays or objects.
 * - Numbers must be finite. Every value other than the table's is rejected (invalid_argument), as are
 *   an unknown operator, a missing value and more than {@link MAX_FILTERS} filters; the message names
 *   the offending item, e.g. `filters[2].value must be an array of strings or numbers for operator "in"`.
 *
 * This module is the single source of truth: storage adapters may push a looser form of the filters
 * down to their index, but results are always post-filtered with {@link matchesFilters}.
 */
import type { JsonObject, JsonValue } from "../catalogs/model.js";
import { FIELD_LIMITS } from "../catalogs/limits.js";
import { invalidArgument } from "../errors/index.js";

export const FILTER_OPERATORS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/**
 * At most this many filters per request. Far more than any real query needs, while bounding the
 * work done per candidate (every filter runs on every candidate, in Redis and in the post-filter)
 * and the size of the pushed-down expression.
 */
export const MAX_FILTERS = 32;
/** At most this many items in an `in`/`nin` list, for the same reason. */
export const MAX_IN_ITEMS = 100;
/** Field names are metadata keys, whose length products are held to. */
export const MAX_FIELD_LENGTH = FIELD_LIMITS.metadataKeyLength;

export type EqualityValue = string | number | boolean;
export type OrderedValue = string | number;

export type MetadataFilter =
  | { field: string; operator: "eq" | "ne"; value: EqualityValue }
  | { field: string; operator: "gt" | "gte" | "lt" | "lte"; value: OrderedValue }
  | { field: string; operator: "in" | "nin"; value: readonly OrderedValue[] }
  | { field: string; operator: "exists"; value: boolean };

export interface RawFilter {
  field: string;
  operator: string;
  /** undefined: the caller sent no value. */
  value: JsonValue | undefined;
}

const isOperator = (op: string): op is FilterOperator => (FILTER_OPERATORS as readonly string[]).includes(op);

const isFiniteNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** Validates raw filters; throws invalid_argument naming the first offending item. */
export function parseFilters(raw: readonly RawFilter[]): MetadataFilter[] {
  if (raw.length > MAX_FILTERS) {
    throw invalidArgument(`filters must have at most ${MAX_FILTERS} items; got ${raw.length}`);
  }
  return raw.map((item, i) => parseFilter(item, `filters[${i}]`));
}

function parseFilter(item: RawFilter, at: string): MetadataFilter {
  const { field, operator, value } = item;
  // The types say string, but transports decode untyped input; a clear 400 beats a TypeError.
  if (typeof field !== "string" || field.trim() === "") throw invalidArgument(`${at}.field is required and must not be blank`);
  if (field.length > MAX_FIELD_LENGTH) throw invalidArgument(`${at}.field must be at most ${MAX_FIELD_LENGTH} characters`);
  if (typeof operator !== "string" || !isOperator(operator)) {
    throw invalidArgument(`${at}.operator must be one of ${FILTER_OPERATORS.join(", ")}; got ${JSON.stringify(operator ?? "")}`);
  }
  if (value === undefined) throw invalidArgument(`${at}.value is required for operator "${operator}"`);
  const wrong = (expected: string) => invalidArgument(`${at}.value must be ${expected} for operator "${operator}"`);
  // JSON has no NaN or Infinity, yet a protobuf Value can carry them.
  const notFinite = typeof value === "number" && !Number.isFinite(value);

  switch (operator) {
    case "eq":
    case "ne":
      if (typeof value === "string" || typeof value === "boolean" || isFiniteNumber(value)) {
        return { field, operator, value };
      }
      throw wrong(notFinite ? "a finite number" : "a string, number or boolean");
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      if (typeof value === "string" || isFiniteNumber(value)) return { field, operator, value };
      throw wrong(notFinite ? "a finite number" : "a number or a string");
    case "in":
    case "nin":
      return { field, operator, value: parseList(value, at, operator, wrong) };
    case "exists":
      if (typeof value === "boolean") return { field, operator, value };
      throw wrong("a boolean");
  }
}

function parseList(value: JsonValue, at: string, operator: string, wrong: (expected: string) => Error): OrderedValue[] {
  if (!Array.isArray(value)) throw wrong("an array of strings or numbers");
  if (value.length === 0) throw wrong("a non-empty array of strings or numbers");
  if (value.length > MAX_IN_ITEMS) throw wrong(`an array of at most ${MAX_IN_ITEMS} items`);
  return value.map((v, j) => {
    if (typeof v === "string" || isFiniteNumber(v)) return v;
    throw invalidArgument(`${at}.value[${j}] must be a string or a finite number for operator "${operator}"`);
  });
}

/** True when the attributes pass every filter; the exact semantics of the table above. */
export function matchesFilters(filters: readonly MetadataFilter[], attributes: JsonObject): boolean {
  return filters.every((f) => matchesFilter(f, attributes));
}

function matchesFilter(f: MetadataFilter, attributes: JsonObject): boolean {
  // Own keys only: "constructor" or "__proto__" must not find Object.prototype's members.
  const present = Object.hasOwn(attributes, f.field);
  const actual = present ? attributes[f.field] : undefined;
  switch (f.operator) {
    case "eq":
      return equalsOrContains(actual, f.value);
    case "ne":
      return !equalsOrContains(actual, f.value);
    case "in":
      return f.value.some((v) => equalsOrContains(actual, v));
    case "nin":
      return !f.value.some((v) => equalsOrContains(actual, v));
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return compares(actual, f.operator, f.value);
    case "exists":
      return present === f.value;
  }
}

function equalsOrContains(actual: JsonValue | undefined, v: EqualityValue): boolean {
  if (Array.isArray(actual)) return actual.some((element) => element === v);
  // Strict equality: same JSON type, numbers numerically (0 === -0), strings exactly.
  return actual === v;
}

function compares(actual: JsonValue | undefined, op: "gt" | "gte" | "lt" | "lte", v: OrderedValue): boolean {
  if (typeof actual !== typeof v) return false;
  const a = actual as OrderedValue;
  switch (op) {
    case "gt":
      return a > v;
    case "gte":
      return a >= v;
    case "lt":
      return a < v;
    case "lte":
      return a <= v;
  }
}
