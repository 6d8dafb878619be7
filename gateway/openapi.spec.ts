// The generator on a synthetic proto with what Vitrine's protos do not use (64-bit integers, maps,
// wrappers, oneofs, recursion, a message in both directions, a 204, renamed path variables).
// The real document is checked against the running service in test/rest/openapi.test.ts.
import { create, createFileRegistry, setExtension } from "@bufbuild/protobuf";
import type { DescService, MessageInitShape } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  file_google_protobuf_duration,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import type { MethodOptions } from "@bufbuild/protobuf/wkt";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { http } from "../src/gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../src/gen/google/api/http_pb.js";
import { file_vitrine_v1_options, http_success_status, required_scope } from "../src/gen/vitrine/v1/options_pb.js";
import { readHttpBindings } from "./http-rules.js";
import { buildOpenApiDocument } from "./openapi.js";
import { httpSuccessStatusOf, requiredScopeOf } from "../src/rpc/method-options.js";

type Field = MessageInitShape<typeof FieldDescriptorProtoSchema>;
const field = (name: string, number: number, type: Type, extra: Field = {}): Field => ({
  name,
  number,
  type,
  label: Label.OPTIONAL,
  // protoc always fills json_name in; the registry relies on it.
  jsonName: name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
  ...extra,
});
const repeated = { label: Label.REPEATED };

function options(rule: MessageInitShape<typeof HttpRuleSchema>, extra: { status?: number; scope?: string } = {}): MethodOptions {
  const opts = create(MethodOptionsSchema);
  setExtension(opts, http, create(HttpRuleSchema, rule));
  if (extra.status !== undefined) setExtension(opts, http_success_status, extra.status);
  if (extra.scope !== undefined) setExtension(opts, required_scope, extra.scope);
  return opts;
}

function service(): DescService {
  const file = create(FileDescriptorProtoSchema, {
    name: "t/v1/things.proto",
    package: "t.v1",
    syntax: "proto3",
    dependency: [
      "google/protobuf/timestamp.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/wrappers.proto",
      "vitrine/v1/options.proto",
    ],
    messageType: [
      {
        name: "Thing",
        field: [
          field("id", 1, Type.STRING),
          field("size", 2, Type.INT64),
          field("count", 3, Type.UINT32),
          field("blob", 4, Type.BYTES),
          field("labels", 5, Type.MESSAGE, { ...repeated, typeName: ".t.v1.Thing.LabelsEntry" }),
          field("limit", 6, Type.MESSAGE, { typeName: ".google.protobuf.Int32Value" }),
          field("ttl", 7, Type.MESSAGE, { typeName: ".google.protobuf.Duration" }),
          field("name", 8, Type.STRING, { oneofIndex: 0 }),
          field("number", 9, Type.INT32, { oneofIndex: 0 }),
          field("children", 10, Type.MESSAGE, { ...repeated, typeName: ".t.v1.Thing" }),
          field("kind", 11, Type.ENUM, { typeName: ".t.v1.Kind" }),
          field("note", 12, Type.STRING, { oneofIndex: 1, proto3Optional: true }),
          field("at", 13, Type.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
        ],
        oneofDecl: [{ name: "label" }, { name: "_note" }],
        nestedType: [
          {
            name: "LabelsEntry",
            options: { mapEntry: true },
            field: [field("key", 1, Type.STRING), field("value", 2, Type.INT64)],
          },
        ],
      },
      { name: "GetThingRequest", field: [field("thing_id", 1, Type.STRING), field("tags", 2, Type.STRING, repeated), field("thing", 3, Type.MESSAGE, { typeName: ".t.v1.Thing" })] },
      { name: "PutThingRequest", field: [field("id", 1, Type.STRING), field("size", 2, Type.INT64)] },
      { name: "Empty" },
    ],
    enumType: [{ name: "Kind", value: [{ name: "KIND_UNSPECIFIED", number: 0 }, { name: "BIG", number: 1 }] }],
    service: [
      {
        name: "Things",
        method: [
          { name: "GetThing", inputType: ".t.v1.GetThingRequest", outputType: ".t.v1.Thing", options: options({ pattern: { case: "get", value: "/things/{thing_id}" } }, { scope: "read" }) },
          { name: "PutThing", inputType: ".t.v1.PutThingRequest", outputType: ".t.v1.Thing", options: options({ pattern: { case: "put", value: "/things/{id}" }, body: "*" }) },
          { name: "Echo", inputType: ".t.v1.Thing", outputType: ".t.v1.Thing", options: options({ pattern: { case: "post", value: "/echo" }, body: "*", responseBody: "children" }) },
          { name: "Forget", inputType: ".t.v1.PutThingRequest", outputType: ".t.v1.Empty", options: options({ pattern: { case: "delete", value: "/things/{id}" } }, { status: 204 }) },
          { name: "Hidden", inputType: ".t.v1.Empty", outputType: ".t.v1.Empty" },
        ],
      },
    ],
  });
  const deps = new Map([
    ["google/protobuf/timestamp.proto", file_google_protobuf_timestamp],
    ["google/protobuf/duration.proto", file_google_protobuf_duration],
    ["google/protobuf/wrappers.proto", file_google_protobuf_wrappers],
    ["vitrine/v1/options.proto", file_vitrine_v1_options],
  ]);
  const registry = createFileRegistry(file, (name) => deps.get(name));
  const desc = registry.getService("t.v1.Things");
  if (desc === undefined) throw new Error("no service");
  return desc;
}

// The service's own readers of its method options, as it hands them to the gateway.
const doc: any = buildOpenApiDocument(readHttpBindings([service()], httpSuccessStatusOf), { title: "Things", version: "1.2.3", requiredScope: requiredScopeOf });
const schemas = doc.components.schemas;

describe("buildOpenApiDocument", () => {
  it("produces a valid OpenAPI 3.1 document whose schemas compile", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    const ajv = new Ajv2020({ strict: true });
    addFormats.default(ajv);
    const defs = JSON.parse(JSON.stringify(schemas).replaceAll('"#/components/schemas/', '"urn:t:defs#/$defs/'));
    ajv.addSchema({ $id: "urn:t:defs", $defs: defs });
    const validate = ajv.compile({ $ref: "urn:t:defs#/$defs/t.v1.Thing" });
    const thing = { id: "a", size: "-12", count: 3, blob: "AAE=", labels: { x: "1" }, children: [], kind: "BIG" };
    expect(validate(thing), ajv.errorsText(validate.errors)).toBe(true);
    expect(validate({ ...thing, limit: 5, ttl: "1.5s", name: "n", note: "", at: "2024-01-01T00:00:00Z" })).toBe(true);
    expect(validate({ ...thing, name: "n", number: 1 })).toBe(false); // one oneof member at most
    expect(validate({ ...thing, size: 12 })).toBe(false); // int64 is a string in responses
    expect(validate({ ...thing, kind: "KIND_UNSPECIFIED" })).toBe(false);
    expect(validate({ ...thing, children: [{ ...thing, labels: { y: 2 } }] })).toBe(false);
  });

  it("lists only annotated methods; no security without an API key option", () => {
    expect(Object.keys(doc.paths).sort()).toEqual(["/echo", "/things/{thing_id}"]);
    expect(Object.keys(doc.paths["/things/{thing_id}"]).sort()).toEqual(["delete", "get", "put"]);
    expect(doc.security).toBeUndefined();
    expect(doc.components.securitySchemes).toBeUndefined();
    expect(doc.info).toEqual({ title: "Things", version: "1.2.3" });
  });

  it("names path variables once per path, whatever each rule calls them", () => {
    const put = doc.paths["/things/{thing_id}"].put;
    expect(put.parameters).toEqual([expect.objectContaining({ name: "thing_id", in: "path", required: true, description: "Sets the request's `id`." })]);
    expect(put.requestBody.description).toMatch(/`id` \(path `thing_id`\)/);
  });

  it("maps scalars, maps, wrappers and well-known types to their proto3 JSON forms", () => {
    const p = schemas["t.v1.Thing"].properties;
    expect(p.size).toEqual({ type: "string", pattern: "^-?[0-9]+$" });
    expect(p.count).toEqual({ type: "integer", minimum: 0, maximum: 4294967295 });
    expect(p.blob).toEqual({ type: "string", contentEncoding: "base64" });
    expect(p.labels).toEqual({ type: "object", propertyNames: { type: "string" }, additionalProperties: { type: "string", pattern: "^-?[0-9]+$" } });
    expect(p.limit).toEqual({ type: "integer", format: "int32" });
    expect(p.ttl.type).toBe("string");
    expect(p.at).toEqual({ type: "string", format: "date-time" });
    expect(p.kind).toEqual({ $ref: "#/components/schemas/t.v1.Kind" });
    expect(schemas["t.v1.Kind"]).toEqual({ type: "string", enum: ["BIG"] });
    expect(p.children).toEqual({ type: "array", items: { $ref: "#/components/schemas/t.v1.Thing" } });
  });

  it("requires in responses exactly the fields written with alwaysEmitImplicit", () => {
    expect(schemas["t.v1.Thing"].required).toEqual(["id", "size", "count", "blob", "labels", "children", "kind"]);
  });

  it("gives a message used both ways a request form that requires nothing", () => {
    const echo = doc.paths["/echo"].post;
    expect(echo.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/t.v1.Thing.Input" });
    expect(schemas["t.v1.Thing.Input"].required).toBeUndefined();
    expect(schemas["t.v1.Thing.Input"].properties.children.items).toEqual({ $ref: "#/components/schemas/t.v1.Thing.Input" });
    expect(echo.responses["200"].content["application/json"].schema).toEqual({ type: "array", items: { $ref: "#/components/schemas/t.v1.Thing" } });
  });

  it("offers as query parameters the fields a query string can carry", () => {
    const get = doc.paths["/things/{thing_id}"].get;
    const query = get.parameters.filter((p: any) => p.in === "query");
    expect(query).toEqual([
      expect.objectContaining({ name: "tags", schema: { type: "array", items: { type: "string" } }, style: "form", explode: true }),
    ]);
    expect(get.security).toBeUndefined();
    expect(get["x-required-scope"]).toBe("read");
    expect(get.requestBody).toBeUndefined();
  });

  it("documents the success status of the rule, without a body for 204, and the errors that apply", () => {
    const del = doc.paths["/things/{thing_id}"].delete;
    expect(del.responses["204"]).toEqual({ description: "No Content" });
    expect(Object.keys(del.responses)).toEqual(["204", "400", "401", "403", "404", "429", "500", "503"]);
    expect(Object.keys(doc.paths["/things/{thing_id}"].put.responses)).toContain("409");
    expect(Object.keys(doc.paths["/things/{thing_id}"].put.responses)).toContain("415");
    expect(doc.components.responses.Error503.headers["Retry-After"]).toBeDefined();
  });
});
