// The OpenAPI document at /openapi.json: a valid OpenAPI 3.1 document that lists exactly the
// gateway's routes, and describes what the real service answers: every response below, successes
// and errors, is validated against the document's schema for its path, method and status, and the
// requests the service accepted are validated against the document's request schemas.
import { randomUUID } from "node:crypto";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readHttpBindings } from "../../gateway/http-rules.js";
import { openSentenceEncoder } from "../../src/embeddings/index.js";
import { httpSuccessStatusOf, SERVICES } from "../../src/rpc/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient, RestResponse } from "../support/rest-client.js";
import { colourHistogram, completeWith, randomUnit, seededRandom } from "../support/synthetic-processing.js";
import type { SyntheticEmbeddings } from "../support/synthetic-processing.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

type Json = any;
type Verb = "GET" | "POST" | "PUT" | "DELETE";

const MAX_REQUEST_BYTES = 64 * 1024;

let server: TestServer;
let doc: Json;
let admin: RestClient;
let api: RestClient;
const org = randomUUID();

beforeAll(async () => {
  server = await startTestServer({ CACHE_DIR: cacheDir, MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES) });
  admin = restClient(server.restUrl, server.adminKey);
  api = restClient(server.restUrl, await server.createKey(org));
  const res = await fetch(`${server.restUrl}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json\b/);
  doc = await res.json();
  schemas = new DocumentSchemas(doc);
}, 60_000);
afterAll(() => server?.close());

// ---------------------------------------------------------------------------------------------
// Checking responses and requests against the document.

/** Compiles the document's schemas with Ajv (JSON Schema 2020-12, the OpenAPI 3.1 dialect). */
class DocumentSchemas {
  private readonly ajv = new Ajv2020({ strict: true, allErrors: true });
  private readonly cache = new Map<string, ValidateFunction>();
  private static readonly ID = "urn:vitrine:openapi:components";

  constructor(private readonly document: Json) {
    addFormats.default(this.ajv);
    // components/schemas become $defs of one schema, so every $ref resolves the same way
    // wherever the referring schema sits; compiling it checks every component schema.
    this.ajv.addSchema({ $id: DocumentSchemas.ID, $defs: rewriteRefs(document.components.schemas) });
    this.ajv.getSchema(DocumentSchemas.ID);
  }

  validator(key: string, schema: Json): ValidateFunction {
    let validate = this.cache.get(key);
    if (validate === undefined) {
      validate = this.ajv.compile(rewriteRefs(schema));
      this.cache.set(key, validate);
    }
    return validate;
  }

  check(key: string, schema: Json, value: unknown, what: string): void {
    const validate = this.validator(key, schema);
    if (!validate(value)) {
      throw new Error(`${what} does not match the document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
    }
  }

  /** The operation whose path template matches the concrete path, or a failure naming what is missing. */
  operation(verb: Verb, path: string): { template: string; operation: Json } {
    const matches = Object.keys(this.document.paths).filter((template) => templateRegExp(template).test(path));
    // A literal segment beats a variable (none of our paths need it, but it is the OpenAPI rule).
    matches.sort((a, b) => variableCount(a) - variableCount(b));
    const template = matches[0];
    if (template === undefined) throw new Error(`the document has no path for ${path}`);
    const operation = this.document.paths[template][verb.toLowerCase()];
    if (operation === undefined) throw new Error(`the document has no ${verb} operation on ${template}`);
    return { template, operation };
  }

  response(operation: Json, status: number): Json {
    let response = operation.responses[String(status)];
    if (response === undefined) throw new Error(`${operation.operationId} does not document status ${status}`);
    if (response.$ref !== undefined) response = this.document.components.responses[String(response.$ref).split("/").pop()!];
    return response;
  }
}

let schemas: DocumentSchemas;

/** Every (operation, status) a test has seen; the coverage test checks all successes were. */
const seen = new Set<string>();

function rewriteRefs(value: Json): Json {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== "object") return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] =
      k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/")
        ? `urn:vitrine:openapi:components#/$defs/${v.slice("#/components/schemas/".length)}`
        : rewriteRefs(v);
  }
  return out;
}

function templateRegExp(template: string): RegExp {
  const pattern = template
    .split("/")
    .map((segment) => (/^\{[^}]+\}$/.test(segment) ? "[^/]+" : segment.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${pattern}$`);
}

const variableCount = (template: string) => (template.match(/\{/g) ?? []).length;

/**
 * Sends the request and validates, against the document: the response body (for the operation
 * matching the path, method and status), its content type, and, when the service accepted the
 * request, the query parameters and JSON body that were sent.
 */
async function call(client: RestClient, verb: Verb, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<RestResponse> {
  const res = await client.call(verb, url, body, headers);
  const [path, query = ""] = url.split("?") as [string, string?];
  const { template, operation } = schemas.operation(verb, path);
  const where = `${verb} ${template} -> ${res.status}`;
  const response = schemas.response(operation, res.status);
  const media = response.content?.["application/json"];
  if (media === undefined) {
    expect(res.body, `${where}: documented without a body`).toBeUndefined();
  } else {
    expect(res.headers.get("content-type"), where).toMatch(/^application\/json\b/);
    schemas.check(`${operation.operationId} ${res.status}`, media.schema, res.body, `response of ${where}`);
  }
  seen.add(`${operation.operationId} ${res.status}`);

  if (res.status < 300) {
    const parameters: Json[] = operation.parameters ?? [];
    for (const [name, value] of new URLSearchParams(query)) {
      const parameter = parameters.find((p) => p.in === "query" && p.name === name);
      if (parameter === undefined) throw new Error(`${where}: query parameter ${name} is not in the document`);
      const schema = parameter.schema;
      const typed = schema.type === "integer" || schema.type === "number" ? Number(value) : schema.type === "boolean" ? value === "true" : value;
      schemas.check(`${operation.operationId} ?${name}`, schema, typed, `query parameter ${name} of ${where}`);
    }
    if (body !== undefined && typeof body !== "string") {
      const requestSchema = operation.requestBody?.content?.["application/json"]?.schema;
      if (requestSchema === undefined) throw new Error(`${where}: a body was accepted but the document has none`);
      schemas.check(`${operation.operationId} request`, requestSchema, body, `request body of ${where}`);
    }
  }
  return res;
}

// ---------------------------------------------------------------------------------------------

describe("the document", () => {
  it("is served without a key, is a valid OpenAPI 3.1 document, and its $refs resolve", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it("names the service, its version, a relative server and the API key header as the security scheme", async () => {
    const { version } = (await import("../../package.json", { with: { type: "json" } })).default;
    expect(doc.info).toMatchObject({ title: "Vitrine", version });
    expect(doc.servers).toEqual([{ url: "/" }]);
    expect(doc.components.securitySchemes).toEqual({
      apiKey: { type: "apiKey", in: "header", name: "SERVICE_API_KEY", description: expect.stringMatching(/admin key/) },
    });
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  it("lists exactly the gateway's routes, each with the scope the RPC requires", () => {
    const shape = (template: string) => template.replace(/\{[^}]*\}/g, "{}");
    const routes = readHttpBindings(SERVICES, httpSuccessStatusOf).map((b) => `${b.verb} ${shape(b.path.template)}`);
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((verb) => `${verb.toUpperCase()} ${shape(path)}`),
    );
    expect(documented.sort()).toEqual([...new Set(routes)].sort());
    expect(routes.length).toBeGreaterThanOrEqual(18);
    const keys = doc.paths["/organizations/{organization_id}/keys"];
    expect(keys.post.security).toEqual([{ apiKey: ["admin"] }]);
    expect(doc.paths["/search"].post.security).toEqual([{ apiKey: ["search"] }]);
  });

  it("maps the protos to JSON as the service writes it", () => {
    const s = doc.components.schemas;
    expect(s["vitrine.v1.Rank"]).toEqual({ type: "string", enum: ["NO_BOOST", "BOOST", "SUPER_BOOST"] });
    expect(s["vitrine.v1.Catalog.Status"].enum).toEqual(["EMPTY", "PROCESSING", "WARNING", "ERROR", "PROCESSED"]);
    expect(s["vitrine.v1.Filter.Operator"].enum).toEqual(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists"]);
    // json_name, zero values always written, optional and message fields only when set.
    expect(Object.keys(s["vitrine.v1.SearchProductsRequest"].properties)).toContain("visual_weight");
    expect(s["vitrine.v1.Product"].properties.createAt).toEqual({ type: "string", format: "date-time" });
    expect(s["vitrine.v1.Product"].required).toEqual(["id", "catalogId", "imageUrl", "objectUrl", "descriptor", "status", "rank"]);
    expect(s["vitrine.v1.Catalog"].required).toEqual(["id", "name", "description", "organizationId", "productCount"]);
    expect(s["vitrine.v1.Pagination"].required).toEqual(["total_items", "total_pages", "current_page", "page_size", "has_next", "has_previous"]);
    expect(s["vitrine.v1.Filter"].properties.value).toEqual({ description: "Any JSON value." });
    expect(s["vitrine.v1.Filter"].required).toBeUndefined();
    // response_body and body: "<field>" are bare arrays; success statuses come from the protos.
    const catalogs = doc.paths["/organizations/{organization_id}/catalogs"];
    expect(catalogs.get.responses["200"].content["application/json"].schema).toEqual({
      type: "array",
      items: { $ref: "#/components/schemas/vitrine.v1.Catalog" },
    });
    expect(catalogs.post.responses["201"]).toBeDefined();
    const products = doc.paths["/organizations/{organization_id}/catalogs/{catalog_id}/products"];
    expect(products.post.requestBody.content["application/json"].schema.type).toBe("array");
    expect(products.post.responses["202"]).toBeDefined();
    expect(products.get.parameters.filter((p: Json) => p.in === "query").map((p: Json) => p.name)).toEqual([
      "page",
      "page_size",
      "search",
      "rank",
      "status",
      "created_after",
      "created_before",
    ]);
    expect(doc.components.schemas.Error.required).toEqual(["status", "message", "time", "method", "url"]);
  });

  it("is strict enough to catch a response that does not match", () => {
    const { operation } = schemas.operation("GET", `/organizations/${org}/catalogs/${randomUUID()}`);
    const schema = schemas.response(operation, 200).content["application/json"].schema;
    const catalog = { id: randomUUID(), name: "n", description: "", organizationId: org, productCount: 0, createdAt: new Date().toISOString() };
    expect(() => schemas.check("probe ok", schema, catalog, "probe")).not.toThrow();
    const { productCount: _, ...missing } = catalog;
    expect(() => schemas.check("probe missing", schema, missing, "probe")).toThrow(/productCount/);
    expect(() => schemas.check("probe extra", schema, { ...catalog, colour: "red" }, "probe")).toThrow(/additional/);
    expect(() => schemas.check("probe type", schema, { ...catalog, productCount: "0" }, "probe")).toThrow(/integer/);
  });

  it("answers 405 for other methods on its path", async () => {
    const res = await fetch(`${server.restUrl}/openapi.json`, { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("real responses match the document", () => {
  const base = `/organizations/${org}/catalogs`;
  let catalogId: string;
  let catalog: string;

  it("catalogs: create, list, get, update, progress", async () => {
    const created = await call(api, "POST", base, { name: "Shoes", description: "All shoes", organizationId: org });
    expect(created.status).toBe(201);
    catalogId = created.body.id;
    catalog = `${base}/${catalogId}`;
    expect((await call(api, "GET", base)).status).toBe(200);
    expect((await call(api, "GET", catalog)).status).toBe(200);
    const updated = await call(api, "PUT", catalog, { id: catalogId, name: "Shoes and boots" });
    expect(updated.status).toBe(200);
    expect(updated.body.updatedAt).toEqual(expect.any(String));
    expect((await call(api, "GET", `${catalog}/progress`)).status).toBe(200);
  });

  it("products: create, list with every query parameter, get, rank, search, recommendations, delete", async () => {
    const text = await openSentenceEncoder({ cacheDir });
    try {
      const random = seededRandom(11);
      const words = ["red dress", "blue denim jacket", "black leather handbag", "white sneakers", "green summer top"];
      const products = words.map((descriptor, i) => ({
        id: `sku-${i}`,
        catalogId,
        imageUrl: `https://images.example/sku-${i}.jpg`,
        descriptor,
        metadata: { colour: descriptor.split(" ")[0]!, price: 10 + i, tags: ["sale"] },
      }));
      const created = await call(api, "POST", `${catalog}/products`, products);
      expect(created.status).toBe(202);
      // One product stays PROCESSING (and so without optional fields set by processing).
      const embeddings = new Map<string, SyntheticEmbeddings>(
        products.slice(0, 4).map((p, i) => [p.id, { image: randomUnit(random, 1280), colour: colourHistogram(random, i), text: text.encode(p.descriptor) }]),
      );
      await completeWith(server, embeddings);

      const list = await call(
        api,
        "GET",
        `${catalog}/products?page=1&page_size=3&search=e&rank=NO_BOOST&status=PROCESSED&created_after=2020-01-01T00:00:00Z&created_before=2100-01-01T00:00:00Z`,
      );
      expect(list.status).toBe(200);
      expect(list.body.data.length).toBeGreaterThan(0);
      expect((await call(api, "GET", `${catalog}/products`)).body.pagination.total_items).toBe(5);
      expect((await call(api, "GET", `${catalog}/products/sku-0`)).body.status).toBe("PROCESSED");
      expect((await call(api, "GET", `${catalog}/products/sku-4`)).body.status).toBe("PROCESSING");
      expect((await call(api, "PUT", `${catalog}/products/sku-1/rank`, { rank: "BOOST" })).status).toBe(200);

      const search = await call(api, "POST", "/search", {
        organizationId: org,
        catalogId,
        query: "red dress",
        topK: 3,
        visual_weight: 0.5,
        similarity_threshold: 0,
        filters: [{ field: "price", operator: "gte", value: 10 }, { field: "tags", operator: "in", value: ["sale"] }],
        user_analytics: { session_id: "s-1", ip_address: "127.0.0.1", user_agent: "vitest" },
      });
      expect(search.status).toBe(200);
      expect(search.body.results.length).toBeGreaterThan(0);

      const recs = await call(api, "POST", "/recs", { organizationId: org, catalogId, productId: "sku-0", topK: 3, visualWeight: 1 });
      expect(recs.status).toBe(200);
      expect(recs.body.results.length).toBeGreaterThan(0);
      expect(recs.body.results[0].metadata).toBeDefined();
      const bare = await call(api, "POST", "/recs", { organizationId: org, catalogId, productId: "sku-0", includeMetadata: false });
      expect(bare.body.results[0].metadata).toBeUndefined();

      expect((await call(admin, "POST", `${catalog}/reindex`, {})).status).toBe(200);
      expect((await call(api, "DELETE", `${catalog}/products/sku-0`)).status).toBe(200);
      const some = await call(api, "DELETE", `${catalog}/products`, ["sku-1", "unknown"]);
      expect(some.body.count).toBe(1);
      expect((await call(api, "DELETE", `${catalog}/products`)).body.count).toBe(3);
    } finally {
      await text.close();
    }
  });

  it("API keys: create, list, revoke with the admin key", async () => {
    const created = await call(admin, "POST", `/organizations/${org}/keys`, {
      name: "storefront",
      scopes: ["read"],
      expiresAt: "2100-01-01T00:00:00Z",
    });
    expect(created.status).toBe(201);
    const listed = await call(admin, "GET", `/organizations/${org}/keys`);
    expect(listed.body.keys.length).toBeGreaterThanOrEqual(2);
    const revoked = await call(admin, "DELETE", `/organizations/${org}/keys/${created.body.apiKey.id}`);
    expect(revoked.status).toBe(200);
    const again = await call(admin, "GET", `/organizations/${org}/keys`);
    expect(again.body.keys.find((k: Json) => k.id === created.body.apiKey.id).revokedAt).toEqual(expect.any(String));
  });

  it("errors: 400, 401, 403, 404, 409, 413, 415 are documented Error objects", async () => {
    const other = randomUUID();
    const readOnly = restClient(server.restUrl, await server.createKey(org, ["read"]));
    const noKey = restClient(server.restUrl, undefined);
    const cases: [number, Promise<RestResponse>][] = [
      [400, call(api, "GET", `${catalog}/products?page_size=101`)],
      [400, call(api, "GET", `${catalog}/products?colour=red`)],
      [400, call(api, "POST", base, { name: "x", colour: "red" })],
      [400, call(api, "POST", "/search", { organizationId: org, catalogId, query: "x", topK: 3, visual_weight: 0, similarity_threshold: 0 })],
      [400, call(api, "GET", `/organizations/not-a-uuid/catalogs`)],
      [401, call(noKey, "GET", base)],
      [401, call(restClient(server.restUrl, "vtr_nope"), "POST", "/recs", { organizationId: org })],
      [403, call(api, "GET", `/organizations/${other}/catalogs`)],
      [403, call(readOnly, "POST", base, { name: "nope" })],
      [403, call(api, "GET", `/organizations/${org}/keys`)],
      [404, call(api, "GET", `${base}/${randomUUID()}`)],
      [404, call(api, "GET", `${catalog}/products/nope`)],
      [404, call(api, "DELETE", `${catalog}/products/nope`)],
      [404, call(admin, "DELETE", `/organizations/${org}/keys/nope`)],
      [409, call(api, "POST", base, { name: "Shoes and boots" })],
      [413, call(api, "POST", `${catalog}/products`, JSON.stringify([{ id: "a", imageUrl: "https://x/a.jpg", descriptor: "x".repeat(MAX_REQUEST_BYTES) }]))],
      [415, call(api, "PUT", `${catalog}/products/sku-2/rank`, "rank=BOOST", { "content-type": "application/x-www-form-urlencoded" })],
    ];
    for (const [status, pending] of cases) {
      const res = await pending;
      expect(res.status, JSON.stringify(res.body)).toBe(status);
    }
  });

  it("catalogs: delete, then 404", async () => {
    expect((await call(api, "DELETE", catalog)).status).toBe(200);
    expect((await call(api, "GET", catalog)).status).toBe(404);
  });

  it("every documented operation was exercised with its success status", () => {
    const missing: string[] = [];
    for (const item of Object.values(doc.paths) as Json[]) {
      for (const operation of Object.values(item) as Json[]) {
        const success = Object.keys(operation.responses).find((s) => s.startsWith("2"));
        if (!seen.has(`${operation.operationId} ${success}`)) missing.push(`${operation.operationId} ${success}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
