import { STATUS_CODES } from "node:http";
import { ScalarType } from "@bufbuild/protobuf";
import type { DescEnum, DescField, DescMessage, DescMethod, JsonObject } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, isWrapperDesc } from "@bufbuild/protobuf/wkt";
import type { HttpBinding } from "./http-rules.js";
import { queryParameters } from "./request-message.js";

// The OpenAPI 3.1 document of the gateway, generated from the same bindings the routes are built
// from (readHttpBindings), so the document cannot list a route the gateway does not serve or miss
// one it does. Schemas follow the proto3 JSON mapping exactly as the gateway applies it:
// request bodies are read with fromJson (unknown fields refused), responses written with toJson
// and alwaysEmitImplicit (every field without explicit presence is always present).

export interface OpenApiOptions {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
  /** An API key sent in this header, as the security scheme `apiKey`, required by every operation. */
  readonly apiKey?: { readonly header: string; readonly description?: string };
  /** The scope a method's key needs, listed in its security requirement and `x-required-scope`; none when absent. */
  readonly requiredScope?: (method: DescMethod) => string | undefined;
}

export type OpenApiDocument = JsonObject;

const OPENAPI_VERSION = "3.1.0";
const JSON_MEDIA_TYPE = "application/json";
const SECURITY_SCHEME = "apiKey";
/** The gateway's Error object; not a proto message, so named without a package. */
const ERROR_SCHEMA = "Error";

type Schema = JsonObject;
type Direction = "input" | "output";

const ERROR_RESPONSES: Readonly<Record<number, string>> = {
  400: "Invalid request: malformed JSON, an unknown field or query parameter, a wrong type, a value out of range, or a failed precondition (INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE).",
  401: "The credentials are missing or not valid (UNAUTHENTICATED).",
  403: "The credentials do not allow this operation (PERMISSION_DENIED).",
  404: "A resource named by the request does not exist (NOT_FOUND).",
  409: "The request conflicts with the current state, e.g. a name already in use (ALREADY_EXISTS, ABORTED).",
  413: "The request body is larger than the limit.",
  415: "The request body is not application/json.",
  429: "Too many requests, e.g. over a rate limit; retry after Retry-After seconds (RESOURCE_EXHAUSTED).",
  500: "Internal error; details are logged, not returned (INTERNAL, UNKNOWN, DATA_LOSS).",
  503: "Temporarily unavailable; retry shortly. May carry Retry-After (UNAVAILABLE).",
};

const RETRY_AFTER_HEADER: JsonObject = {
  description: "Seconds to wait before retrying, when the service knows.",
  required: false,
  schema: { type: "integer", minimum: 0 },
};

/** The error statuses an operation may answer with, from what the binding accepts. */
function errorStatuses(binding: HttpBinding): number[] {
  const statuses = [400, 401, 403, 404];
  // Creating or replacing a resource is where an existing one can conflict.
  if (binding.successStatus === 201 || binding.verb === "PUT" || binding.verb === "PATCH") statuses.push(409);
  if (binding.body !== undefined) statuses.push(413, 415);
  statuses.push(429, 500, 503);
  return statuses;
}

export function buildOpenApiDocument(bindings: readonly HttpBinding[], options: OpenApiOptions): OpenApiDocument {
  const schemas = new SchemaRegistry(bindings);
  const paths: Record<string, Record<string, JsonObject>> = {};
  const operationIds = new Set<string>();
  const tags = new Map<string, JsonObject>();
  const usedErrors = new Set<number>();
  const pathNames = new PathNames();

  for (const binding of bindings) {
    const { method } = binding;
    const service = method.parent;
    const { path, paramName } = pathNames.of(binding);

    let operationId = `${service.name}_${method.name}`;
    for (let n = 1; operationIds.has(operationId); n++) operationId = `${service.name}_${method.name}_${n}`;
    operationIds.add(operationId);
    tags.set(service.name, { name: service.name, description: `RPCs of ${service.typeName}.` });

    const scope = options.requiredScope?.(method) ?? "";
    const operation: JsonObject = {
      operationId,
      summary: words(method.name),
      description: operationDescription(binding, scope),
      tags: [service.name],
    };
    const parameters = operationParameters(binding, schemas, paramName);
    if (parameters.length > 0) operation.parameters = parameters;
    if (options.apiKey !== undefined) {
      // OpenAPI 3.1 lets a non-OAuth requirement list role names: here, the scope the key needs.
      operation.security = [{ [SECURITY_SCHEME]: scope === "" ? [] : [scope] }];
    }
    if (scope !== "") operation["x-required-scope"] = scope;
    if (binding.body !== undefined) operation.requestBody = requestBody(binding, schemas, paramName);
    operation.responses = operationResponses(binding, schemas, usedErrors);

    const item = (paths[path] ??= {});
    const verb = binding.verb.toLowerCase();
    if (item[verb] !== undefined) throw new Error(`OpenAPI: two bindings for ${binding.verb} ${path}`);
    item[verb] = operation;
  }

  const components: JsonObject = {
    schemas: { [ERROR_SCHEMA]: errorObjectSchema(), ...schemas.components() },
    responses: errorResponses(usedErrors),
  };
  const document: JsonObject = {
    openapi: OPENAPI_VERSION,
    info: {
      title: options.title,
      version: options.version,
      ...(options.description === undefined ? {} : { description: options.description }),
    },
    servers: [{ url: "/" }],
  };
  if (options.apiKey !== undefined) {
    components.securitySchemes = {
      [SECURITY_SCHEME]: {
        type: "apiKey",
        in: "header",
        name: options.apiKey.header,
        ...(options.apiKey.description === undefined ? {} : { description: options.apiKey.description }),
      },
    };
    document.security = [{ [SECURITY_SCHEME]: [] }];
  }
  document.tags = [...tags.values()];
  document.paths = paths;
  document.components = components;
  return document;
}

/** Path variables, then query parameters: one entry per field, under its proto name (the JSON name is accepted too). */
function operationParameters(binding: HttpBinding, schemas: SchemaRegistry, paramName: (variable: string) => string): JsonObject[] {
  const parameters: JsonObject[] = [];
  for (const [variable, field] of binding.pathFields) {
    parameters.push({
      name: paramName(variable),
      in: "path",
      required: true,
      description: `Sets the request's \`${field.name}\`.`,
      schema: schemas.fieldSchema(field, "input"),
    });
  }
  const query = queryParameters(binding);
  for (const field of new Set(query.fields.values())) {
    const alias = field.jsonName !== field.name ? ` Also accepted as \`${field.jsonName}\` (not both).` : "";
    parameters.push({
      name: field.name,
      in: "query",
      required: false,
      description: `Sets the request's \`${field.name}\`${field.fieldKind === "list" ? ", one parameter per item" : ""}.${alias}`,
      schema: schemas.fieldSchema(field, "input"),
      ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}),
    });
  }
  return parameters;
}

/** The success response and references to the error responses it can give (added to `usedErrors`). */
function operationResponses(binding: HttpBinding, schemas: SchemaRegistry, usedErrors: Set<number>): JsonObject {
  const { method } = binding;
  const responses: JsonObject = {};
  const success = String(binding.successStatus);
  const successDescription = STATUS_CODES[binding.successStatus] ?? "Success";
  if (binding.successStatus === 204) {
    responses[success] = { description: successDescription };
  } else {
    const schema =
      binding.responseBody === undefined ? schemas.messageSchema(method.output, "output") : schemas.fieldSchema(binding.responseBody, "output");
    const what =
      binding.responseBody === undefined
        ? `The ${method.output.name}.`
        : `The \`${binding.responseBody.name}\` field of ${method.output.name}, on its own.`;
    responses[success] = { description: `${successDescription}. ${what}`, content: { [JSON_MEDIA_TYPE]: { schema } } };
  }
  for (const status of errorStatuses(binding)) {
    usedErrors.add(status);
    responses[String(status)] = { $ref: `#/components/responses/${errorResponseName(status)}` };
  }
  return responses;
}

/** The shared error responses, one per status some operation gives. */
function errorResponses(statuses: Set<number>): JsonObject {
  const responses: JsonObject = {};
  for (const status of [...statuses].sort((a, b) => a - b)) {
    responses[errorResponseName(status)] = {
      description: ERROR_RESPONSES[status] ?? STATUS_CODES[status] ?? "Error",
      // The gateway passes on a retry-after the RPC attached to its error.
      ...(status === 429 || status === 503 ? { headers: { "Retry-After": RETRY_AFTER_HEADER } } : {}),
      content: { [JSON_MEDIA_TYPE]: { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } },
    };
  }
  return responses;
}

function operationDescription(binding: HttpBinding, scope: string): string {
  const { method } = binding;
  const parts = [`RPC \`${method.parent.typeName}.${method.name}\`.`];
  if (scope !== "") parts.push(`Required scope: \`${scope}\`.`);
  return parts.join(" ");
}

function requestBody(binding: HttpBinding, schemas: SchemaRegistry, paramName: (variable: string) => string): JsonObject {
  let schema: Schema;
  let description: string;
  if (binding.body === "*") {
    schema = schemas.messageSchema(binding.method.input, "input");
    description = `The ${binding.method.input.name}.`;
    if (binding.pathFields.size > 0) {
      const fields = [...binding.pathFields].map(([variable, f]) => `\`${f.jsonName}\` (path \`${paramName(variable)}\`)`);
      description += ` Fields bound by the path may be left out; when present they must equal the path: ${fields.join(", ")}.`;
    }
  } else {
    schema = schemas.fieldSchema(binding.body as DescField, "input");
    description = `The \`${(binding.body as DescField).name}\` field of ${binding.method.input.name}, on its own.`;
  }
  description += " An absent or empty body is an empty message.";
  // Not `required`: the gateway reads an absent body as the empty message; the RPC decides.
  return { description, content: { [JSON_MEDIA_TYPE]: { schema } } };
}

function errorResponseName(status: number): string {
  return `Error${status}`;
}

function errorObjectSchema(): Schema {
  return {
    type: "object",
    description: "The Error object of every error response.",
    properties: {
      status: { type: "integer", minimum: 400, maximum: 599, description: "HTTP status code." },
      message: { type: "string", description: "What went wrong, for the caller." },
      time: { type: "string", format: "date-time", description: "When, RFC 3339 (UTC)." },
      method: { type: "string", description: "HTTP method of the failed request." },
      url: { type: "string", description: "Path and query of the failed request, as received." },
    },
    required: ["status", "message", "time", "method", "url"],
    additionalProperties: false,
  };
}

/** "CreateCatalog" -> "Create Catalog". */
function words(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1 $2");
}

/**
 * OpenAPI path keys. Two templates that differ only in variable names
 * ("/catalogs/{catalog_id}" and "/catalogs/{id}") are the same path to OpenAPI, which forbids
 * listing both: the first binding names the variables and later ones reuse its names.
 */
class PathNames {
  private readonly byShape = new Map<string, readonly string[]>();

  of(binding: HttpBinding): { path: string; paramName: (variable: string) => string } {
    const { template, variables } = binding.path;
    const shape = template.replace(/\{[^}]*\}/g, "{}");
    let names = this.byShape.get(shape);
    if (names === undefined) {
      names = variables;
      this.byShape.set(shape, names);
    }
    const rename = new Map(variables.map((v, i) => [v, names[i] ?? v]));
    let i = 0;
    const path = shape.replace(/\{\}/g, () => `{${names[i++]}}`);
    return { path, paramName: (variable) => rename.get(variable) ?? variable };
  }
}

const TIMESTAMP = "google.protobuf.Timestamp";
const DURATION = "google.protobuf.Duration";

/**
 * JSON Schemas of messages and enums, in components/schemas by full name. A message that appears
 * both in requests and in responses gets two schemas: the response form lists the fields the
 * gateway always writes as required, the request form requires nothing (proto3 JSON input may
 * leave any field out), and is named "<full name>.Input". A message that only travels one way, the
 * usual case, has one schema under its plain full name.
 */
class SchemaRegistry {
  private readonly schemas = new Map<string, Schema>();
  private readonly directions = new Map<string, Set<Direction>>();
  /** Which message or enum each component name belongs to. */
  private readonly owners = new Map<string, string>();

  constructor(bindings: readonly HttpBinding[]) {
    for (const binding of bindings) {
      if (binding.body === "*") this.visitMessage(binding.method.input, "input");
      else if (binding.body !== undefined) this.visitField(binding.body, "input");
      if (binding.responseBody === undefined) this.visitMessage(binding.method.output, "output");
      else this.visitField(binding.responseBody, "output");
    }
  }

  components(): JsonObject {
    return Object.fromEntries([...this.schemas].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** A `$ref` to the message's schema, or the inline schema of a well-known type. */
  messageSchema(desc: DescMessage, direction: Direction): Schema {
    const wkt = wellKnownSchema(desc);
    if (wkt !== undefined) return wkt;
    const name = this.componentName(desc, direction);
    if (!this.schemas.has(name)) {
      this.schemas.set(name, {}); // placeholder: recursive messages refer to themselves
      this.schemas.set(name, this.buildMessage(desc, direction));
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** The schema of a field's JSON value: lists are arrays, maps objects. */
  fieldSchema(field: DescField, direction: Direction): Schema {
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar);
      case "enum":
        return this.enumSchema(field.enum);
      case "message":
        return this.messageSchema(field.message, direction);
      case "list":
        return {
          type: "array",
          items:
            field.listKind === "scalar"
              ? scalarSchema(field.scalar)
              : field.listKind === "enum"
                ? this.enumSchema(field.enum)
                : this.messageSchema(field.message, direction),
        };
      case "map": {
        const value =
          field.mapKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.mapKind === "enum"
              ? this.enumSchema(field.enum)
              : this.messageSchema(field.message, direction);
        return { type: "object", propertyNames: mapKeySchema(field.mapKey), additionalProperties: value };
      }
    }
  }

  private enumSchema(desc: DescEnum): Schema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    const name = desc.typeName;
    this.claim(name, desc.typeName);
    if (!this.schemas.has(name)) {
      // The zero value "*_UNSPECIFIED" means "not set" and is neither sent nor accepted.
      const values = desc.values.filter((v) => !(v.number === 0 && /(^|_)UNSPECIFIED$/.test(v.name))).map((v) => v.name);
      this.schemas.set(name, { type: "string", enum: values });
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  private buildMessage(desc: DescMessage, direction: Direction): Schema {
    const properties: JsonObject = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      properties[field.jsonName] = this.fieldSchema(field, direction);
      // toJson with alwaysEmitImplicit writes every field without explicit presence (scalars and
      // enums not marked optional, lists, maps), zero values included; messages, `optional`
      // fields and oneof members only when set. On input, proto3 JSON requires nothing.
      const legacyRequired = field.presence === FeatureSet_FieldPresence.LEGACY_REQUIRED;
      if (legacyRequired || (direction === "output" && field.presence !== FeatureSet_FieldPresence.EXPLICIT)) {
        required.push(field.jsonName);
      }
    }
    const schema: Schema = { type: "object", properties };
    if (required.length > 0) schema.required = required;
    // The gateway refuses unknown fields in requests, and writes exactly these in responses.
    schema.additionalProperties = false;
    // At most one member of each oneof: when one is present, the others must not be.
    const exclusive: JsonObject = {};
    for (const oneof of desc.oneofs) {
      const names = oneof.fields.map((f) => f.jsonName);
      if (names.length < 2) continue;
      for (const name of names) {
        exclusive[name] = { properties: Object.fromEntries(names.filter((n) => n !== name).map((n) => [n, false])) };
      }
    }
    if (Object.keys(exclusive).length > 0) schema.dependentSchemas = exclusive;
    return schema;
  }

  private componentName(desc: DescMessage, direction: Direction): string {
    const both = (this.directions.get(desc.typeName)?.size ?? 0) > 1;
    const name = both && direction === "input" ? `${desc.typeName}.Input` : desc.typeName;
    this.claim(name, `${desc.typeName} (${direction})`);
    return name;
  }

  /** Component names must stay unambiguous (a nested message could be called "Input"). */
  private claim(name: string, owner: string): void {
    const existing = this.owners.get(name);
    if (existing === undefined) this.owners.set(name, owner);
    else if (existing !== owner) throw new Error(`OpenAPI: schema name ${name} is used by both ${existing} and ${owner}`);
    if (name === ERROR_SCHEMA) throw new Error(`OpenAPI: schema name ${name} is reserved for the Error object`);
  }

  private visitField(field: DescField, direction: Direction): void {
    if (field.fieldKind === "message") this.visitMessage(field.message, direction);
    else if (field.fieldKind === "list" && field.listKind === "message") this.visitMessage(field.message, direction);
    else if (field.fieldKind === "map" && field.mapKind === "message") this.visitMessage(field.message, direction);
  }

  private visitMessage(desc: DescMessage, direction: Direction): void {
    if (wellKnownSchema(desc) !== undefined) return;
    let set = this.directions.get(desc.typeName);
    if (set === undefined) this.directions.set(desc.typeName, (set = new Set()));
    if (set.has(direction)) return;
    set.add(direction);
    for (const field of desc.fields) this.visitField(field, direction);
  }
}

/** Messages whose JSON form is not an object of their fields (proto3 JSON mapping). */
function wellKnownSchema(desc: DescMessage): Schema | undefined {
  if (isWrapperDesc(desc)) {
    const value = desc.fields[0];
    return value?.fieldKind === "scalar" ? scalarSchema(value.scalar) : undefined;
  }
  switch (desc.typeName) {
    case TIMESTAMP:
      return { type: "string", format: "date-time" };
    case DURATION:
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$" };
    case "google.protobuf.FieldMask":
      return { type: "string" };
    case "google.protobuf.Struct":
      return { type: "object", description: "Any JSON object." };
    case "google.protobuf.Value":
      return { description: "Any JSON value." };
    case "google.protobuf.ListValue":
      return { type: "array", description: "Any JSON array." };
    case "google.protobuf.Empty":
      return { type: "object", additionalProperties: false };
    case "google.protobuf.Any":
      return { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] };
    default:
      return undefined;
  }
}

function scalarSchema(scalar: ScalarType): Schema {
  switch (scalar) {
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4294967295 };
    // 64-bit integers are decimal strings in proto3 JSON (numbers are accepted on input too).
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", pattern: "^[0-9]+$" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
  }
}

/** Map keys are JSON object keys, so always strings; this says which strings. */
function mapKeySchema(key: ScalarType): Schema {
  switch (key) {
    case ScalarType.BOOL:
      return { enum: ["true", "false"] };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { pattern: "^[0-9]+$" };
    default:
      return { pattern: "^-?[0-9]+$" };
  }
}
