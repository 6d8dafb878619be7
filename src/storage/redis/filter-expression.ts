/**
 * Pushes metadata filters down to Redis vector sets (`VSIM ... FILTER expr`) as a pre-filter.
 *
 * The pushed expression only has to be a SUPERSET of the exact rule ({@link matchesFilters}), which
 * callers always apply afterwards; it must never drop a true match. What Redis 8.0.2 does, read in
 * its source (modules/vector-sets/expr.c, fastjson.c) and checked in test/search/redis-filter-expression.test.ts:
 *
 * - A selector (`.field`) whose key is missing, or whose value Redis cannot read, makes the WHOLE
 *   expression false, even under `or`/`not`. Unreadable: objects, and arrays holding an object at any
 *   depth. So only filters that need the field present are pushed (never ne, nin, exists false), and
 *   attributes must be stored as {@link redisAttributesJson}, which Redis can read throughout.
 * - Selectors are `.` + `[A-Za-z0-9_-]+` (`.my-field` is one selector, not a subtraction); the JSON key
 *   is matched byte for byte. Filters on other field names are not pushed.
 * - `a in b` is membership in a tuple only: `"x" in .f` is false when .f is the string "x" (no
 *   substring search in 8.0.2). Hence `.f == v or v in .f` for "equal, or an array containing".
 * - `==` compares strings bytewise and numbers as doubles; mixed types compare as numbers (arrays,
 *   and strings strtod cannot read whole, are 0). JSON true/false read as 1/0. Beyond the guard in
 *   {@link equalsAny}, this is left to the post-filter: it only adds false positives.
 * - String literals ('...' or "...") are taken RAW: a backslash keeps the next character from ending
 *   the literal but stays in the value. Attribute strings are JSON-unescaped for \" \\ \n \r \t
 *   only; other escapes lose their backslash (\u00e9 reads as "u00e9"). The expression ends at a NUL.
 * - Number literals are `-?[0-9.eE]+` read by strtod, at most 255 characters: no `+`, no `e-7`.
 */
import type { JsonObject, JsonValue } from "../../catalogs/model.js";
import type { MetadataFilter } from "../../search/filters.js";

/** Field names a Redis selector can spell; others are filtered in the post-filter only. */
const SELECTOR_FIELD = /^[A-Za-z0-9_-]+$/;

/**
 * The attribute JSON to store with VADD ... SETATTR / VSETATTR, for {@link redisFilterExpression} to
 * be a superset. `JSON.parse` of it gives back `attributes` exactly, so it also serves as the stored
 * metadata. Redis cannot read objects, nor arrays holding an object at any depth, and a selector it
 * cannot read fails the whole expression. So such keys are written twice: first a view Redis can
 * read (objects, and array elements that are arrays or objects, replaced by null), then the real value. Redis's reader
 * takes the first occurrence of a key, JSON.parse the last (ECMA-262 JSON.parse; RFC 8259 leaves
 * duplicates to the parser). No filter tells the view from the value: no filter value equals null,
 * an object or an array, so every filter matches the view exactly when it matches the value.
 */
export function redisAttributesJson(attributes: JsonObject): string {
  const json = JSON.stringify(attributes);
  const entries = Object.entries(attributes).map(([key, value]) => ({ key, value, view: redisReadableView(value) }));
  const lastViewed = entries.findLastIndex((e) => e.view !== e.value);
  if (lastViewed < 0) return json;
  // Views for every key up to the last one that needs one, so JSON.parse (which keeps a key where
  // it first appears) also gives back the keys in their original order.
  const views = entries.slice(0, lastViewed + 1).map((e) => `${JSON.stringify(e.key)}:${JSON.stringify(e.view)}`);
  return `{${views.join(",")},${json.slice(1)}`;
}

/** `value` itself when Redis can read it, else the view described above. */
function redisReadableView(value: JsonValue): JsonValue {
  const isComposite = (v: JsonValue) => v !== null && typeof v === "object";
  if (Array.isArray(value)) return value.some(isComposite) ? value.map((e) => (isComposite(e) ? null : e)) : value;
  return isComposite(value) ? null : value;
}

/**
 * A Redis vector-set FILTER expression whose matches are a SUPERSET of matchesFilters (never excludes
 * a true match) over attributes stored as {@link redisAttributesJson}, or undefined when nothing can
 * be pushed down. Callers post-filter exactly with matchesFilters. Filters that cannot be expressed
 * soundly are left out, which only widens the superset.
 *
 * `stringFields`: fields a sample of the set found holding strings only (filter-shares.ts). An eq or
 * in on one of them whose values are strings that read as no number is pushed bare, `.f == "v"`
 * (see {@link bareEqualsAny}): Redis reads the field once an element instead of two or three times.
 */
export function redisFilterExpression(filters: readonly MetadataFilter[], stringFields: ReadonlySet<string> = NO_STRING_FIELDS): string | undefined {
  const clauses = filters.map((f) => clauseOf(f, stringFields)).filter((c): c is string => c !== undefined);
  return clauses.length === 0 ? undefined : clauses.join(" and ");
}

/** No field known to hold strings only: every eq/in keeps its guards. */
export const NO_STRING_FIELDS: ReadonlySet<string> = new Set();

/** The filters redisFilterExpression pushes down: the expression passes about what they pass. */
export function pushedFilters(filters: readonly MetadataFilter[]): MetadataFilter[] {
  return filters.filter((f) => clauseOf(f, NO_STRING_FIELDS) !== undefined);
}

function clauseOf(f: MetadataFilter, stringFields: ReadonlySet<string>): string | undefined {
  if (!SELECTOR_FIELD.test(f.field)) return undefined;
  const sel = `.${f.field}`;
  switch (f.operator) {
    case "eq":
    case "in": {
      const values = typeof f.value === "object" ? f.value : [f.value];
      return (stringFields.has(f.field) ? bareEqualsAny(sel, values) : undefined) ?? equalsAny(sel, values);
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      // Redis orders numbers only; string comparisons (dates) stay in the post-filter.
      if (typeof f.value !== "number") return undefined;
      const v = numberLiteral(f.value);
      return v === undefined ? undefined : `${sel} ${COMPARISON[f.operator]} ${v}`;
    }
    case "exists":
      // Every readable value equals itself (null == null; tuples compare as 0 == 0), and after
      // redisAttributesJson every value is readable; a missing key fails the selector.
      return f.value ? `${sel} == ${sel}` : undefined;
    case "ne":
    case "nin":
      // True for products lacking the field, which a selector would reject.
      return undefined;
  }
}

const COMPARISON = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/**
 * "The field equals one of `values`, or is an array holding one": `==` for scalar fields, `v in .f`
 * for arrays. An array compared with `==` to a string reads as 0 == 0 (mixed types compare as
 * numbers, and neither an array nor a non-numeric string is one), so every array field would pass;
 * `and .f != G`, with G a string outside `values`, cuts that out (0 != 0 is false) while keeping the
 * string fields equal to a value (they differ from G byte-wise). Not for numbers: a number field 0
 * would fail the guard.
 */
function equalsAny(sel: string, values: readonly (string | number | boolean)[]): string | undefined {
  const literals = values.map(literal);
  if (literals.some((v) => v === undefined)) return undefined;
  const pick = (wantStrings: boolean) => literals.filter((_, i) => (typeof values[i] === "string") === wantStrings) as string[];
  const oneOf = (lits: string[]) => (lits.length === 1 ? `${sel} == ${lits[0]}` : `${sel} in [${lits.join(", ")}]`);
  const [others, strings] = [pick(false), pick(true)];
  const terms: string[] = [];
  if (others.length > 0) terms.push(oneOf(others));
  if (strings.length > 0) terms.push(`(${oneOf(strings)} and ${sel} != "${guardString(values)}")`);
  terms.push(...literals.map((v) => `${v} in ${sel}`));
  return `(${terms.join(" or ")})`;
}

/**
 * equalsAny without its guards, for a field whose values are strings: `.f == "v"` (`or`-joined for
 * several), or undefined unless every value is a string that reads as no number. Still a superset
 * on any field: a string field equal to a value passes, and an array (the guards' case) or a number
 * 0 reads as 0 == 0 against such a value, so it passes too, as a false positive the post-filter
 * drops (why only a field sampled as strings takes this form: on an array field every element
 * would pass). At EF 250 the guarded form cost 19-70% more on walks through many failing elements
 * (docs/filtered-search-measurements.md, session 51: "--variants expr").
 */
function bareEqualsAny(sel: string, values: readonly (string | number | boolean)[]): string | undefined {
  if (!values.every((v) => typeof v === "string" && readsAsNoNumber(v))) return undefined;
  const literals = values.map((v) => stringLiteral(v as string));
  if (literals.some((v) => v === undefined)) return undefined;
  const terms = literals.map((v) => `${sel} == ${v}`);
  return terms.length === 1 ? terms[0] : `(${terms.join(" or ")})`;
}

const NUMBER_START = /^\s*[+-]?(?:[0-9]|\.[0-9]|inf|nan)/i;

/**
 * strtod reads no number from the start of `v` (after its leading space and sign: no digit, no
 * `.` and a digit, no inf or nan; hex starts with 0), so Redis reads it as 0 whether it wants the
 * whole string read or not: "h42" and "M" do, "42", " .5", "-inf" and "0x1f" do not.
 */
function readsAsNoNumber(v: string): boolean {
  return !NUMBER_START.test(v);
}

/** "", or failing that "_", "__", ...: a string outside `values` that Redis reads as the number 0. */
function guardString(values: readonly unknown[]): string {
  let guard = "";
  while (values.includes(guard)) guard += "_";
  return guard;
}

function literal(v: string | number | boolean): string | undefined {
  if (typeof v === "boolean") return v ? "1" : "0";
  return typeof v === "number" ? numberLiteral(v) : stringLiteral(v);
}

/** Redis's number tokens allow digits, `.`, `e`/`E` and a leading `-`, at most 255 characters. */
const MAX_NUMBER_LITERAL = 255;

/**
 * A literal strtod reads as exactly `n`: JavaScript's shortest round-trip digits, written without
 * the exponent signs Redis's tokenizer rejects (1e+21 -> 1e21; 5e-7 -> 0.0000005).
 */
function numberLiteral(n: number): string | undefined {
  if (!Number.isFinite(n)) return undefined;
  const text = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-])(\d+)$/.exec(text);
  let out = text;
  if (m) {
    const [, sign, lead, rest = "", expSign, exp] = m;
    out = expSign === "+" ? `${sign}${lead}${rest ? `.${rest}` : ""}e${exp}` : `${sign}0.${"0".repeat(Number(exp) - 1)}${lead}${rest}`;
  }
  return out.length <= MAX_NUMBER_LITERAL ? out : undefined;
}

/**
 * Controls JSON.stringify escapes in a way Redis's JSON reader does not undo (\b, \f, \u00XX), and
 * lone surrogates (escaped as \uD8XX by JSON, sent as U+FFFD in the command): a stored value holding
 * them reads differently in Redis, so a filter value holding them could miss its true match. NUL
 * would also end the expression early.
 */
const UNREADABLE_IN_REDIS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Quotes `s` so that Redis reads back exactly `s`, or undefined when it cannot. Redis keeps literal
 * text raw, so escaping is impossible; instead pick a quote the text cannot close early: scanning as
 * Redis does (a backslash swallows the next character), the literal must end at the closing quote,
 * neither before (an unescaped quote inside) nor after (a trailing backslash swallowing the quote).
 * This is what keeps values from changing the expression's structure.
 */
function stringLiteral(s: string): string | undefined {
  if (UNREADABLE_IN_REDIS.test(s)) return undefined;
  for (const quote of ['"', "'"]) {
    if (closesExactlyAtEnd(s, quote)) return `${quote}${s}${quote}`;
  }
  return undefined;
}

function closesExactlyAtEnd(s: string, quote: string): boolean {
  let i = 0;
  while (i < s.length) {
    if (s[i] === "\\") i += 2;
    else if (s[i] === quote) return false;
    else i += 1;
  }
  return i === s.length;
}
