import { fromJson, ScalarType } from "@bufbuild/protobuf";
import type { DescField, DescMessage, JsonObject, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { explainDecodeError, isJsonObject } from "./decode-errors.js";
import type { DecodeContext, FieldOrigin } from "./decode-errors.js";
import { GatewayError } from "./error-object.js";
import type { HttpBinding } from "./http-rules.js";

export interface RequestParts {
  /** Route parameters as Fastify decoded them, keyed by proto field name. */
  readonly params: Readonly<Record<string, string | undefined>>;
  readonly query: URLSearchParams;
  /** The parsed JSON body; undefined when the request had none (absent or empty). */
  readonly body: JsonValue | undefined;
}

export type RequestDecoder = (parts: RequestParts) => MessageShape<DescMessage>;

// Query strings can only carry text, so only fields whose proto JSON form is a string, number or
// boolean (or a list of those) can come from them. Timestamps and friends qualify: their JSON
// form is a string.
const STRING_FORM_MESSAGES = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"]);

/**
 * Builds the function that turns path params, query params and body into the RPC's input message.
 * All the rule-dependent lookups happen once here, not per request.
 */
export function createRequestDecoder(binding: HttpBinding): RequestDecoder {
  const input = binding.method.input;
  const bodyField = binding.body === "*" ? undefined : binding.body;
  const { fields: queryFields, reserved: reservedQueryNames } = queryParameters(binding);

  return ({ params, query, body }) => {
    // The caller's body is copied with spread (own data properties), never assigned key by key,
    // so a "__proto__" key stays an ordinary unknown key for fromJson to reject. Keys assigned
    // below come from descriptors.
    let json: JsonObject = {};
    const origins = new Map<string, FieldOrigin>();

    if (binding.body === "*") {
      if (body !== undefined && body !== null) {
        if (!isJsonObject(body)) throw new GatewayError(400, "request body must be a JSON object");
        json = withoutPathFields(body, binding, params);
      }
    } else if (bodyField !== undefined && body !== undefined) {
      json = { [bodyField.jsonName]: body };
    }

    for (const [name, field] of binding.pathFields) {
      const value = params[name];
      if (value === undefined) continue;
      json[field.jsonName] = textToJson(field, value, `path parameter "${name}"`);
      origins.set(field.name, { from: "path", param: name });
    }

    const seen = new Map<DescField, string>();
    for (const name of new Set(query.keys())) {
      const field = queryFields.get(name);
      if (field === undefined) {
        const reason = reservedQueryNames.get(name);
        throw new GatewayError(
          400,
          reason === undefined ? `unknown query parameter "${name}"` : `query parameter "${name}" is not allowed: ${reason}`,
        );
      }
      const earlier = seen.get(field);
      if (earlier !== undefined) {
        throw new GatewayError(400, `query parameters "${earlier}" and "${name}" set the same field`);
      }
      seen.set(field, name);
      const values = query.getAll(name);
      const what = `query parameter "${name}"`;
      if (field.fieldKind === "list") {
        json[field.jsonName] = values.map((v) => textToJson(field, v, what));
      } else {
        if (values.length > 1) throw new GatewayError(400, `${what} must not be repeated`);
        json[field.jsonName] = textToJson(field, values[0] ?? "", what);
      }
      origins.set(field.name, { from: "query", param: name });
    }

    try {
      return fromJson(input, json);
    } catch (error) {
      const ctx: DecodeContext = { origins, bodyField };
      throw new GatewayError(400, explainDecodeError(input, json, error, ctx));
    }
  };
}

export interface QueryParameters {
  /** Fields the query string may set, under both spellings protobuf-es accepts in JSON. */
  readonly fields: ReadonlyMap<string, DescField>;
  /** Known names the query string may not use, with the reason. */
  readonly reserved: ReadonlyMap<string, string>;
}

/** Which input fields of a binding the query string may set (also what the OpenAPI document lists). */
export function queryParameters(binding: HttpBinding): QueryParameters {
  const bodyField = binding.body === "*" ? undefined : binding.body;
  const fields = new Map<string, DescField>();
  const reserved = new Map<string, string>();
  for (const field of binding.method.input.fields) {
    let reason: string | undefined;
    if (binding.pathFields.has(field.name)) reason = "it is set by the path";
    else if (binding.body === "*" || field === bodyField) reason = "it belongs in the request body";
    else if (!fitsInQuery(field)) reason = "it cannot be expressed in a query string";
    for (const name of new Set([field.name, field.jsonName])) {
      if (reason === undefined) fields.set(name, field);
      else reserved.set(name, reason);
    }
  }
  return { fields, reserved };
}

/**
 * With `body: "*"` the body may repeat path-bound fields. Equal values are harmless; different
 * ones mean the caller is confused about which resource they address, so that is refused rather
 * than silently letting one side win.
 */
function withoutPathFields(body: JsonObject, binding: HttpBinding, params: RequestParts["params"]): JsonObject {
  const rest: JsonObject = { ...body };
  for (const [name, field] of binding.pathFields) {
    const pathValue = params[name];
    for (const key of new Set([field.jsonName, field.name])) {
      if (!Object.hasOwn(rest, key)) continue;
      const bodyValue = rest[key];
      delete rest[key];
      if (bodyValue === null || bodyValue === undefined || pathValue === undefined) continue;
      // Path fields are text. Anything else in the body cannot match, and is not serialised to
      // say so: a value nested thousands deep would overflow the stack.
      if (typeof bodyValue !== "string") {
        throw new GatewayError(400, `${field.jsonName} in the body must be a string equal to the path's (${clip(pathValue)})`);
      }
      if (bodyValue !== pathValue) {
        throw new GatewayError(400, `${field.jsonName} in the body (${clip(bodyValue)}) does not match the path (${clip(pathValue)})`);
      }
    }
  }
  return rest;
}

/** Caller text quoted in a message, cut so an error never grows with the request. */
function clip(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 80)}...`;
}

/** Path and query values are text; proto JSON wants real booleans, everything else parses from strings. */
function textToJson(field: DescField, text: string, what: string): JsonValue {
  if (!expectsBoolean(field)) return text;
  if (text === "true") return true;
  if (text === "false") return false;
  throw new GatewayError(400, `${what} must be true or false`);
}

function expectsBoolean(field: DescField): boolean {
  const BOOL_VALUE = "google.protobuf.BoolValue";
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.BOOL;
    case "message":
      return field.message.typeName === BOOL_VALUE;
    case "list":
      if (field.listKind === "scalar") return field.scalar === ScalarType.BOOL;
      return field.listKind === "message" && field.message.typeName === BOOL_VALUE;
    default:
      return false;
  }
}

function fitsInQuery(field: DescField): boolean {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
      return true;
    case "map":
      return false;
    case "message":
      return STRING_FORM_MESSAGES.has(field.message.typeName) || isWrapperDesc(field.message);
    case "list":
      return field.listKind !== "message" || STRING_FORM_MESSAGES.has(field.message.typeName) || isWrapperDesc(field.message);
  }
}
