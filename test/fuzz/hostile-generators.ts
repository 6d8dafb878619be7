// Generators of hostile input for the property-based suite (hostile-input.test.ts), kept apart so
// the next contributor can add a case in one place: a new nasty string goes in NASTY_STRINGS, a
// new body shape in hostileBody, a new route comes for free from the protos' HTTP annotations.
import { create, fromJson, ScalarType } from "@bufbuild/protobuf";
import type { DescField, DescMessage, DescMethod, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import type { Arbitrary } from "fast-check";
import type { HttpBinding } from "../../gateway/http-rules.js";

/** Strings that broke, or could break, something somewhere: encodings, injection, path tricks, sizes. */
export const NASTY_STRINGS: readonly string[] = [
  "",
  " ",
  "😀",
  "\u202E\u200B",
  "\u0000",
  "a\u0000b",
  "\uD800",
  "é",
  "ﬁ",
  "İ",
  "\r\n",
  "\t",
  "%00",
  "%E0%A4%A",
  "%2F",
  "..",
  "../../etc/passwd",
  "' OR '1'='1",
  "\"; DROP TABLE products; --",
  "\\",
  "\\u0000",
  "{\"$gt\":\"\"}",
  "__proto__",
  "constructor",
  "null",
  "undefined",
  "NaN",
  "-0",
  "1e309",
  "0x10",
  "<script>alert(1)</script>",
  ".field == 1 or 1",
  "x".repeat(129),
  "x".repeat(1025),
  "y".repeat(20_000),
  "00000000-0000-0000-0000-000000000000",
  "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
];

/** Any string a caller could send: nasty ones, arbitrary Unicode, raw code units (lone surrogates). */
export const hostileString: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom("a", "-", "_", ".", "~", "0"), minLength: 1, maxLength: 140 }) },
);

/** JSON nested `depth` deep, as text: arrays or objects. */
export const deepJsonText: Arbitrary<string> = fc
  .tuple(fc.constantFrom("[", '{"a":'), fc.integer({ min: 500, max: 20_000 }))
  .map(([open, depth]) => (open === "[" ? "[".repeat(depth) + "]".repeat(depth) : open.repeat(depth) + "1" + "}".repeat(depth)));

/** Numbers JSON can carry that programs mishandle. */
const hostileNumber: Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -0, -1, 1.5, 2 ** 31, 2 ** 53, -(2 ** 63), 1e308, -1e308, Number.MIN_VALUE),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, biased toward hostile leaves. */
export const hostileJson: Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom("__proto__", "id", "name")), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** Values the fixture knows to exist, so that hostile parts are mixed with ones that get further. */
export interface KnownIds {
  organizationId: string;
  otherOrganizationId: string;
  catalogId: string;
  /** A second catalog, the one Delete calls may name: deleting the first would stop later calls short. */
  spareCatalogId: string;
  productId: string;
}

/** The ids a method may use: Delete methods get the spare catalog. */
function idsFor(methodName: string, known: KnownIds): KnownIds {
  return methodName.startsWith("Delete") ? { ...known, catalogId: known.spareCatalogId } : known;
}

/** A path variable: a known id when one fits the variable, else (or often anyway) something hostile. */
function pathValue(variable: string, known: KnownIds): Arbitrary<string> {
  const good: Record<string, string[]> = {
    organization_id: [known.organizationId, known.otherOrganizationId],
    catalog_id: [known.catalogId],
    id: [known.catalogId],
    product_id: [known.productId],
  };
  const fitting = good[variable] ?? [];
  return fitting.length === 0 ? hostileString : fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...fitting) }, { weight: 1, arbitrary: hostileString });
}

/**
 * A valid value for input fields by JSON name, so that a request can be valid but for the one or
 * two fields made hostile, and get past the checks that come first (key, ids, types) to the deeper
 * ones and to the stores. A new field with a name not listed here is only ever sent hostile.
 */
const VALID_FIELDS: Record<string, (known: KnownIds) => unknown> = {
  organizationId: (k) => k.organizationId,
  catalogId: (k) => k.catalogId,
  id: (k) => k.catalogId,
  productId: (k) => k.productId,
  productIds: (k) => [k.productId],
  products: () => [{ id: "fz1", imageUrl: "https://images.example.invalid/a.jpg", descriptor: "a blue shirt", metadata: { colour: "blue" } }],
  query: () => "red dress",
  topK: () => 5,
  visualWeight: () => 0.5,
  similarityThreshold: () => 0,
  filters: () => [{ field: "colour", operator: "eq", value: "red" }],
  includeMetadata: () => true,
  name: () => "fuzzed",
  description: () => "d",
  scopes: () => ["read"],
  rank: () => "BOOST",
  pageSize: () => 10,
};

/** The JSON value of a valid body for a route (the whole object for body "*", the field's value otherwise). */
function validBody(binding: HttpBinding, known: KnownIds): { object: Record<string, unknown>; field: string | undefined } {
  const fields = binding.body === "*" ? binding.method.input.fields.filter((f) => !binding.pathFields.has(f.name)) : binding.body ? [binding.body] : [];
  const object: Record<string, unknown> = {};
  for (const f of fields) {
    const valid = VALID_FIELDS[f.jsonName];
    if (valid) object[f.jsonName] = valid(known);
  }
  return { object, field: binding.body === "*" || binding.body === undefined ? undefined : binding.body.jsonName };
}

/** One or two field names to make hostile; ids (what stores compare against) half the time. */
function fieldChoice(names: string[]): Arbitrary<string[]> {
  const ids = names.filter((n) => /[iI]ds?$/.test(n) || n === "products");
  const any = fc.subarray(names, { minLength: Math.min(1, names.length), maxLength: Math.min(2, names.length) });
  return ids.length === 0 ? any : fc.oneof(any, fc.constantFrom(...ids).map((n) => [n]));
}

/** A valid body with one or two fields (or one product's field) replaced by hostile values. */
function mutatedBody(binding: HttpBinding, known: KnownIds): Arbitrary<unknown> {
  const { object, field } = validBody(binding, known);
  const names = binding.method.input.fields.map((f) => f.jsonName);
  const productFields = ["id", "imageUrl", "descriptor", "metadata", "catalogId"];
  const hostileValue = fc.oneof({ weight: 2, arbitrary: hostileString }, { weight: 1, arbitrary: hostileJson });
  return fc
    .tuple(fieldChoice(names), fc.array(hostileValue, { minLength: 2, maxLength: 2 }), fc.constantFrom(...productFields))
    .map(([chosen, values, productField]) => {
      const body: Record<string, unknown> = { ...object };
      chosen.forEach((name, i) => {
        // Inside the products array: one product's field, so the rest of the batch stays valid.
        if (name === "products" && Array.isArray(body.products)) body.products = [{ ...(body.products[0] as object), [productField]: values[i] }];
        else body[name] = values[i];
      });
      return field === undefined ? body : body[field];
    });
}

/** A request body as bytes on the wire, with the content type it is sent under. */
export interface WireBody {
  text: string | undefined;
  contentType: string | undefined;
}

/**
 * Bodies for a route: a valid body with one or two fields made hostile (gets as deep as it can),
 * an object of the input message's field names holding hostile values, arbitrary JSON, nested
 * JSON, broken JSON, or the wrong content type.
 */
export function hostileBody(binding: HttpBinding, known: KnownIds): Arbitrary<WireBody> {
  const fieldNames = binding.method.input.fields.map((f) => f.jsonName);
  const json = (value: Arbitrary<unknown>) => value.map((v) => ({ text: JSON.stringify(v), contentType: "application/json" as string | undefined }));
  const fieldObject = fc.dictionary(fc.constantFrom(...fieldNames, "unknownField"), hostileJson, { maxKeys: 5 });
  return fc.oneof(
    { weight: 8, arbitrary: json(mutatedBody(binding, known)) },
    { weight: 3, arbitrary: json(fieldObject) },
    { weight: 1, arbitrary: json(fc.array(fieldObject, { maxLength: 3 })) },
    { weight: 2, arbitrary: json(hostileJson) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...fieldNames), deepJsonText).map(([field, deep]) => ({ text: `{"${field}":${deep}}`, contentType: "application/json" })) },
    { weight: 1, arbitrary: deepJsonText.map((text) => ({ text, contentType: "application/json" })) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 60 }).map((text) => ({ text, contentType: "application/json" })) },
    { weight: 1, arbitrary: fc.constantFrom("{", "[{]", '{"a":1,}', "\uFEFF{}", "nul").map((text) => ({ text, contentType: "application/json" })) },
    { weight: 1, arbitrary: fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "multipart/form-data").map((contentType) => ({ text: "a=1", contentType })) },
    { weight: 1, arbitrary: fc.constant({ text: undefined, contentType: undefined }) },
  );
}

/** Which key the request carries. */
export type KeyChoice = "valid" | "admin" | "other-organization" | "read-only" | "missing" | "garbage" | "wrong-secret";

// Mostly a key that gets through, so that the rest of the request is tested too.
export const keyChoice: Arbitrary<KeyChoice> = fc.oneof(
  { weight: 5, arbitrary: fc.constant<KeyChoice>("valid") },
  { weight: 6, arbitrary: fc.constantFrom<KeyChoice>("admin", "other-organization", "read-only", "missing", "garbage", "wrong-secret") },
);

export interface HostileRestRequest {
  binding: HttpBinding;
  /** Verb sent: usually the route's, sometimes another (405). */
  method: string;
  /** Path and query as sent, percent-encoded where needed. */
  url: string;
  body: WireBody;
  key: KeyChoice;
}

/** A REST request to one of `bindings`, hostile in its path, query, body and key. */
export function hostileRestRequest(bindings: readonly HttpBinding[], allKnown: KnownIds): Arbitrary<HostileRestRequest> {
  return fc.constantFrom(...bindings).chain((binding) => {
    const known = idsFor(binding.method.name, allKnown);
    return fc
      .record({
        values: fc.tuple(...binding.path.variables.map((v) => pathValue(v, known))),
        // Mostly none: an unknown query parameter alone is refused before anything else is looked at.
        query: fc.oneof(
          { weight: 3, arbitrary: fc.constant<[string, string][]>([]) },
          { weight: 1, arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom("pageSize", "page_size", "pageToken", "status", "topK"), hostileString), hostileString), { maxLength: 3 }) },
        ),
        body: hostileBody(binding, known),
        key: keyChoice,
        // One in ten with another verb (405, or another route's 401/400).
        otherVerb: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom("PATCH", "PUT", "DELETE", "GET", "POST") }),
      })
      .map(({ values, query, body, key, otherVerb }) => {
        let i = 0;
        const path = binding.path.template.replace(/\{[^}]+\}/g, () => encodeURIComponent(toWellFormed(values[i++] ?? "")).replace(/^\.\.?$/, "%2E"));
        const search = new URLSearchParams(query.map(([k, v]): [string, string] => [toWellFormed(k), toWellFormed(v)])).toString();
        return { binding, method: otherVerb ?? binding.verb, url: search === "" ? path : `${path}?${search}`, body, key };
      });
  });
}

/** Lone surrogates cannot be percent-encoded (encodeURIComponent throws); the HTTP layer sees U+FFFD. */
function toWellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/** Raw request lines and headers only a hand-written client sends. */
export const hostileRawRequest: Arbitrary<Buffer> = fc.oneof(
  fc.tuple(fc.constantFrom("GET", "POST", "BREW", "G\u0000T"), fc.uint8Array({ minLength: 1, maxLength: 40 })).map(([verb, bytes]) =>
    Buffer.concat([Buffer.from(`${verb} /`, "latin1"), Buffer.from(bytes), Buffer.from(" HTTP/1.1\r\nhost: x\r\n\r\n")]),
  ),
  fc.integer({ min: 16_500, max: 40_000 }).map((n) => Buffer.from(`GET /${"a".repeat(n)} HTTP/1.1\r\nhost: x\r\n\r\n`)),
  fc.integer({ min: 16_500, max: 40_000 }).map((n) => Buffer.from(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-h: ${"h".repeat(n)}\r\n\r\n`)),
  fc.constantFrom(
    "POST /search HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    "POST /search HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n",
    "GET / HTTP/9.9\r\nhost: x\r\n\r\n",
    "GET /healthz HTTP/1.1\r\nho st: x\r\n\r\n",
  ).map((text) => Buffer.from(text, "latin1")),
);

/**
 * An RPC input message with hostile values in every field it sets (Connect and gRPC doors):
 * strings from hostileString, out-of-range numbers, unknown enum numbers, nested messages.
 */
export function hostileMessage(desc: DescMessage, depth = 0): Arbitrary<Record<string, unknown>> {
  const entries = desc.fields.map((field) => [field.localName, fc.option(hostileFieldValue(field, depth), { freq: 3 })] as const);
  return fc.record(Object.fromEntries(entries)).map((record) => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== null)));
}

/**
 * An RPC input message valid but for one or two hostile fields (see VALID_FIELDS), or, a third of
 * the time, hostile throughout.
 */
export function mutatedMessage(method: DescMethod, allKnown: KnownIds): Arbitrary<Record<string, unknown>> {
  const desc = method.input;
  const known = idsFor(method.name, allKnown);
  const valid: Record<string, unknown> = {};
  for (const field of desc.fields) {
    const value = VALID_FIELDS[field.jsonName];
    if (!value) continue;
    if (field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar")) valid[field.localName] = value(known);
    if (field.fieldKind === "enum") valid[field.localName] = field.enum.values.at(-1)?.number ?? 0;
  }
  const chosen = fc.subarray(desc.fields, { minLength: Math.min(1, desc.fields.length), maxLength: Math.min(2, desc.fields.length) }).chain((fields) =>
    fc.tuple(...fields.map((f) => hostileFieldValue(f, 1).map((v) => [f.localName, v] as const))),
  );
  return fc.oneof(
    { weight: 2, arbitrary: chosen.map((pairs) => ({ ...valid, ...Object.fromEntries(pairs) })) },
    { weight: 1, arbitrary: hostileMessage(desc) },
  );
}

function hostileFieldValue(field: DescField, depth: number): Arbitrary<unknown> {
  switch (field.fieldKind) {
    case "scalar":
      return hostileScalar(field.scalar);
    case "enum":
      return fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.number)), fc.integer({ min: -5, max: 1000 }));
    case "list":
      if (field.listKind === "scalar") return fc.array(hostileScalar(field.scalar), { maxLength: 3 });
      if (field.listKind === "enum") return fc.array(fc.integer({ min: -5, max: 100 }), { maxLength: 3 });
      return depth > 1 ? fc.constant([]) : fc.array(hostileMessageValue(field.message, depth + 1), { maxLength: 3 });
    case "map":
      return fc.dictionary(hostileString, field.mapKind === "scalar" ? hostileScalar(field.scalar) : fc.constant(undefined), { maxKeys: 2 });
    case "message":
      return depth > 1 ? fc.constant(undefined) : hostileMessageValue(field.message, depth + 1);
  }
}

// Well-known types are given in their JSON-ish forms where protobuf-es accepts them as init values.
function hostileMessageValue(desc: DescMessage, depth: number): Arbitrary<unknown> {
  if (desc.typeName === "google.protobuf.Struct") {
    return fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }).map((json) => fromJson(StructSchema, json as JsonObject));
  }
  if (desc.typeName === "google.protobuf.Value") return hostileJson.map((json) => fromJson(ValueSchema, json as JsonValue));
  if (desc.typeName === "google.protobuf.Timestamp") {
    return fc.record({ seconds: fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }), nanos: fc.integer({ min: -5, max: 2_000_000_000 }) });
  }
  return hostileMessage(desc, depth).map((init) => create(desc, init as never));
}

function hostileScalar(type: ScalarType): Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return hostileString;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 64 });
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.oneof(hostileNumber, fc.constantFrom(Number.NaN, Infinity, -Infinity));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.oneof(fc.constantFrom(0, 1, 2 ** 32 - 1), fc.nat());
    default:
      return fc.oneof(fc.constantFrom(0, -1, 2 ** 31 - 1, -(2 ** 31)), fc.integer());
  }
}
