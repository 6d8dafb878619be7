import { fromJson, ScalarType } from "@bufbuild/protobuf";
import type { DescEnum, DescField, DescMessage, DescOneof, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation, isWrapperDesc } from "@bufbuild/protobuf/wkt";

// protobuf-es reports decoding failures with proto names and without the path to the value
// (`cannot decode enum vitrine.v1.Rank from JSON: "MEGA"` does not say which field). Rather than
// parse its wording, we walk the JSON and ask fromJson about one field or list item at a time:
// the first piece that fails on its own is the culprit, and its descriptor tells us what was
// expected. This runs only after a request has already failed, so the extra decoding is free.

/** Where a top-level field's value came from, so the message can name what the caller typed. */
export type FieldOrigin = { readonly from: "query"; readonly param: string } | { readonly from: "path"; readonly param: string };

export interface DecodeContext {
  /** Origins of top-level fields, by proto field name; fields not listed came from the body. */
  readonly origins: ReadonlyMap<string, FieldOrigin>;
  /** For `body: "<field>"`: the field whose JSON is the whole request body. */
  readonly bodyField: DescField | undefined;
}

type Step = { readonly field: DescField } | { readonly index: number } | { readonly key: string };

export function explainDecodeError(desc: DescMessage, json: JsonObject, error: unknown, ctx: DecodeContext): string {
  const problem = problemInMessage(desc, json, [], ctx);
  if (problem !== undefined) return problem;
  const text = error instanceof Error ? error.message : String(error);
  return `invalid request: ${text.replace(/^cannot decode (?:message|field|enum) [\w.]+ from JSON:?\s*/, "")}`;
}

function problemInMessage(desc: DescMessage, json: JsonObject, path: Step[], ctx: DecodeContext): string | undefined {
  const keyOf = new Map<DescField, string>();
  const setOneofs = new Map<DescOneof, DescField>();
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key) ?? desc.fields.find((f) => f.name === key);
    if (field === undefined) return unknownField(desc, key, path, ctx);
    const fieldPath = [...path, { field }];

    // protobuf-es accepts both the JSON name and the proto name, so one field can arrive twice.
    const earlierKey = keyOf.get(field);
    if (earlierKey !== undefined) return `${subject(fieldPath, ctx)} is set twice, as "${earlierKey}" and "${key}"`;
    keyOf.set(field, key);

    if (value === null) continue; // null means "unset" for every field kind
    if (field.oneof !== undefined) {
      const other = setOneofs.get(field.oneof);
      if (other !== undefined) {
        return `${subject([...path, { field: other }], ctx)} and ${subject(fieldPath, ctx)} cannot both be set`;
      }
      setOneofs.set(field.oneof, field);
    }

    if (decodes(desc, { [key]: value })) continue;
    const problem = problemInField(desc, field, key, value, fieldPath, ctx);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function problemInField(
  parent: DescMessage,
  field: DescField,
  key: string,
  value: JsonValue,
  path: Step[],
  ctx: DecodeContext,
): string | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarProblem(field.scalar, path, ctx, value);
    case "enum":
      return enumProblem(field.enum, path, ctx);
    case "message":
      return problemInMessageValue(field.message, value, path, ctx);
    case "list": {
      if (!Array.isArray(value)) return `${subject(path, ctx)} must be an array`;
      for (const [index, item] of value.entries()) {
        const itemPath = [...path, { index }];
        if (item === null) return `${subject(itemPath, ctx)} must not be null`;
        if (field.listKind === "message") {
          const problem = problemInMessageValue(field.message, item, itemPath, ctx);
          if (problem !== undefined) return problem;
          continue;
        }
        if (decodes(parent, { [key]: [item] })) continue;
        return field.listKind === "enum" ? enumProblem(field.enum, itemPath, ctx) : scalarProblem(field.scalar, itemPath, ctx, item);
      }
      return undefined;
    }
    case "map": {
      if (!isJsonObject(value)) return `${subject(path, ctx)} must be an object`;
      for (const [mapKey, item] of Object.entries(value)) {
        const itemPath = [...path, { key: mapKey }];
        if (decodes(parent, { [key]: { [mapKey]: item } })) continue;
        if (item === null) return `${subject(itemPath, ctx)} must not be null`;
        const problem =
          field.mapKind === "message"
            ? problemInMessageValue(field.message, item, itemPath, ctx)
            : field.mapKind === "enum"
              ? enumProblem(field.enum, itemPath, ctx)
              : scalarProblem(field.scalar, itemPath, ctx, item);
        // When the value is fine on its own, the key is what failed (non-string map keys).
        return problem ?? `${subject(path, ctx)} has an invalid key "${mapKey}"`;
      }
      return undefined;
    }
  }
}

function problemInMessageValue(desc: DescMessage, value: JsonValue, path: Step[], ctx: DecodeContext): string | undefined {
  if (hasCustomJsonRepresentation(desc)) {
    return decodes(desc, value) ? undefined : wellKnownProblem(desc, value, path, ctx);
  }
  if (!isJsonObject(value)) return `${subject(path, ctx)} must be an object`;
  return problemInMessage(desc, value, path, ctx);
}

function wellKnownProblem(desc: DescMessage, value: JsonValue, path: Step[], ctx: DecodeContext): string {
  const what = subject(path, ctx);
  if (isWrapperDesc(desc)) {
    const inner = desc.fields[0];
    if (inner?.fieldKind === "scalar") return scalarProblem(inner.scalar, path, ctx, value);
  }
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return `${what} must be an RFC 3339 date-time such as "2024-01-31T09:30:00Z"`;
    case "google.protobuf.Duration":
      return `${what} must be a duration in seconds such as "1.5s"`;
    case "google.protobuf.Struct":
      return `${what} must be an object`;
    case "google.protobuf.ListValue":
      return `${what} must be an array`;
    case "google.protobuf.FieldMask":
      return `${what} must be a comma-separated list of field names`;
    case "google.protobuf.Empty":
      return `${what} must be an empty object`;
    default:
      return `${what} is not a valid ${desc.typeName}`;
  }
}

function scalarProblem(scalar: ScalarType, path: Step[], ctx: DecodeContext, value: JsonValue): string {
  const what = subject(path, ctx);
  switch (scalar) {
    case ScalarType.STRING:
      return `${what} must be a string`;
    case ScalarType.BOOL:
      return `${what} must be true or false`;
    case ScalarType.BYTES:
      return `${what} must be base64-encoded`;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return `${what} must be a number`;
  }
  // An integral value that still failed is out of range, and then the range is the useful part.
  const integral = typeof value === "number" ? Number.isInteger(value) : typeof value === "string" && /^-?\d+$/.test(value);
  if (!integral) return `${what} must be an integer`;
  switch (scalar) {
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return `${what} must be an integer from 0 to 4294967295`;
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return `${what} must be an integer from 0 to 18446744073709551615`;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return `${what} must be an integer from -9223372036854775808 to 9223372036854775807`;
    default:
      return `${what} must be an integer from -2147483648 to 2147483647`;
  }
}

function enumProblem(desc: DescEnum, path: Step[], ctx: DecodeContext): string {
  // The zero "..._UNSPECIFIED" value decodes, but it is a proto3 placeholder, not a choice to offer.
  const names = desc.values.filter((v) => !(v.number === 0 && v.name.endsWith("_UNSPECIFIED"))).map((v) => v.name);
  return `${subject(path, ctx)} must be one of ${names.join(", ")}`;
}

function unknownField(desc: DescMessage, key: string, path: Step[], ctx: DecodeContext): string {
  const where = path.length === 0 ? key : `${render(path)}.${key}`;
  let message = `unknown field "${where}" in the request body`;
  if (ctx.bodyField !== undefined && path.length === 1 && "field" in path[0]! && path[0].field === ctx.bodyField) {
    message = `unknown field "${key}" in the request body`;
  }
  // The spec mixes snake_case and camelCase between endpoints (visual_weight vs visualWeight),
  // so a near miss in spelling style is the most likely mistake.
  const loose = (s: string) => s.replace(/_/g, "").toLowerCase();
  const near = desc.fields.find((f) => loose(f.jsonName) === loose(key) || loose(f.name) === loose(key));
  return near === undefined ? message : `${message} (did you mean "${near.jsonName}"?)`;
}

/** How a message names the value at `path`: by query/path parameter, as the body, or as a field. */
function subject(path: Step[], ctx: DecodeContext): string {
  const first = path[0];
  if (first !== undefined && "field" in first) {
    const origin = ctx.origins.get(first.field.name);
    if (origin !== undefined) return `${origin.from} parameter "${origin.param}"`;
    if (path.length === 1 && first.field === ctx.bodyField) return "the request body";
  }
  return `field "${render(path)}"`;
}

function render(path: Step[]): string {
  let out = "";
  for (const step of path) {
    if ("field" in step) out += (out === "" ? "" : ".") + step.field.jsonName;
    else if ("index" in step) out += `[${step.index}]`;
    else out += /^[A-Za-z_$][\w$]*$/.test(step.key) ? `.${step.key}` : `[${JSON.stringify(step.key)}]`;
  }
  return out;
}

function decodes(desc: DescMessage, json: JsonValue): boolean {
  try {
    fromJson(desc, json);
    return true;
  } catch {
    return false;
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
