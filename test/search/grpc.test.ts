// Search and recommendations over gRPC (HTTP/2): the same answers as REST for the same request, ids,
// scores and metadata alike, and each error kind on its gRPC status code. Real Redis 8 and MariaDB.
import { randomUUID } from "node:crypto";
import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Value } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import type { Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedSentenceEncoder, TextImageMap } from "../../src/embeddings/index.js";
import { CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { Filter_Operator } from "../../src/gen/vitrine/v1/common_pb.js";
import { RecommendationService } from "../../src/gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../../src/gen/vitrine/v1/search_service_pb.js";
import {
  COLOUR_NAMES,
  createCatalog,
  expectHits,
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
import type { Indexed, Json, JsonRecord, ProductSpec, Rank, Served } from "../support/search-fixture.js";
import { codeOf } from "../support/connect-errors.js";

interface RestFilter {
  field: string;
  operator: keyof typeof Filter_Operator;
  value?: Json;
}
interface RestSearch {
  organizationId: string;
  catalogId: string;
  query: string;
  topK?: number;
  visual_weight?: number;
  similarity_threshold?: number;
  filters?: RestFilter[];
}
interface RestRecs {
  organizationId: string;
  catalogId: string;
  productId: string;
  topK?: number;
  visualWeight?: number;
  filters?: RestFilter[];
  includeMetadata?: boolean;
}

const RANKS: Record<string, Rank> = { "sku-8": "BOOST", "sku-9": "SUPER_BOOST" };

let text: OpenedSentenceEncoder;
let s: Served;
let catalogId: string;
let specs: ProductSpec[];
let map: TextImageMap;
let search: Client<typeof SearchService>;
let recs: Client<typeof RecommendationService>;
let key: string;
const auth = (apiKey: string = key) => ({ headers: { service_api_key: apiKey } });

beforeAll(async () => {
  text = await openText();
  s = await serve();
  catalogId = await createCatalog(s);
  specs = syntheticProducts(text, 60, {
    seed: 41,
    metadataOf: (i): JsonRecord => ({ colour: COLOUR_NAMES[i % 11]!, price: 10 + i, ...(i % 3 === 0 ? { tags: ["sale", { nested: [i] }] } : {}) }),
  });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
  for (const [id, rank] of Object.entries(RANKS)) expect((await s.api.put(`${productsPath(s, catalogId)}/${id}/rank`, { rank })).status).toBe(200);
  map = await storedMap(s, catalogId);
  const transport = createGrpcTransport({ baseUrl: s.server.grpcUrl });
  search = createClient(SearchService, transport);
  recs = createClient(RecommendationService, transport);
  key = await s.server.createKey(s.org);
}, 180_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
});

const indexed = (): Indexed[] => specs.map((p) => ({ id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: RANKS[p.id] ?? "NO_BOOST" }));

const grpcFilters = (filters: RestFilter[] = []) =>
  filters.map((f) => ({ field: f.field, operator: Filter_Operator[f.operator], value: f.value === undefined ? undefined : fromJson(ValueSchema, f.value) }));

const toGrpcSearch = (b: RestSearch) => ({
  organizationId: b.organizationId,
  catalogId: b.catalogId,
  query: b.query,
  topK: b.topK,
  visualWeight: b.visual_weight,
  similarityThreshold: b.similarity_threshold,
  filters: grpcFilters(b.filters),
});

const toGrpcRecs = (b: RestRecs) => ({
  organizationId: b.organizationId,
  catalogId: b.catalogId,
  productId: b.productId,
  topK: b.topK,
  visualWeight: b.visualWeight,
  filters: grpcFilters(b.filters),
  includeMetadata: b.includeMetadata,
});

const searchRequest = (extra: Partial<RestSearch> = {}): RestSearch => ({
  organizationId: s.org,
  catalogId,
  query: "red dress",
  topK: 10,
  visual_weight: 0.5,
  similarity_threshold: 0,
  ...extra,
});
const recsRequest = (extra: Partial<RestRecs> = {}): RestRecs => ({ organizationId: s.org, catalogId, productId: "sku-4", ...extra });

describe("the same answers as REST", () => {
  it.each<[string, Partial<RestSearch>]>([
    ["a plain query", {}],
    ["all of the visual weight", { query: "black leather handbag", visual_weight: 1, topK: 25 }],
    ["a threshold", { query: "green summer top", visual_weight: 0.3, similarity_threshold: 0.3, topK: 60 }],
    ["boosted products in reach", { query: "blue denim jacket", topK: 30 }],
    ["filters", { query: "white sneakers", filters: [{ field: "tags", operator: "eq", value: "sale" }, { field: "price", operator: "lt", value: 50 }] }],
    ["filters matching nothing", { filters: [{ field: "colour", operator: "in", value: ["teal", 7] }] }],
  ])("search: %s", async (_name, extra) => {
    const body = searchRequest(extra);
    const rest = await s.api.post("/search", body);
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    const grpc = await search.searchProducts(toGrpcSearch(body), auth());
    expect(grpc.status).toBe("success");
    expect(grpc.results.map((r) => ({ productId: r.productId, score: r.score, metadata: r.metadata }))).toEqual(rest.body.results);

    // And both are the exact answer, not merely the same one.
    const threshold = body.similarity_threshold ?? 0;
    const expected = ranking(map, indexed(), textQuery(text, body.query), body.visual_weight!)
      .filter((h) => h.score >= threshold && matchesSome(h.metadata, body.filters ?? []))
      .slice(0, body.topK);
    expectHits(grpc.results, expected);
  });

  it.each<[string, Partial<RestRecs>]>([
    ["defaults (topK 10, visual weight 1, metadata)", {}],
    ["a visual weight and a larger topK", { visualWeight: 0.4, topK: 30 }],
    ["filters", { topK: 20, filters: [{ field: "price", operator: "gte", value: 40 }, { field: "colour", operator: "ne", value: "red" }] }],
    ["no metadata", { topK: 5, includeMetadata: false }],
  ])("recs: %s", async (_name, extra) => {
    const body = recsRequest(extra);
    const rest = await s.api.post("/recs", body);
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    const grpc = await recs.getRecommendations(toGrpcRecs(body), auth());
    expect(grpc.status).toBe("success");
    const asRest = grpc.results.map((r) => (r.metadata === undefined ? { productId: r.productId, score: r.score } : { productId: r.productId, score: r.score, metadata: r.metadata }));
    expect(asRest).toEqual(rest.body.results);
    if (body.includeMetadata === false) expect(grpc.results.every((r) => r.metadata === undefined)).toBe(true);
    else expect(grpc.results.every((r) => r.metadata?.rank !== undefined)).toBe(true);

    const subject = specs.find((p) => p.id === body.productId)!.embeddings;
    const expected = ranking(map, indexed().filter((p) => p.id !== body.productId), productQuery(map, subject), body.visualWeight ?? 1)
      .filter((h) => matchesSome(h.metadata, body.filters ?? []))
      .slice(0, body.topK ?? 10);
    expectHits(grpc.results, expected);
  });
});

/** Just enough of the filter rule for the filters above (filters.test.ts holds the full reference). */
function matchesSome(metadata: JsonRecord, filters: RestFilter[]): boolean {
  return filters.every((f) => {
    const v = metadata[f.field];
    switch (f.operator) {
      case "eq":
        return Array.isArray(v) ? v.includes(f.value!) : v === f.value;
      case "ne":
        return Array.isArray(v) ? !v.includes(f.value!) : v !== f.value;
      case "lt":
        return typeof v === "number" && v < (f.value as number);
      case "gte":
        return typeof v === "number" && v >= (f.value as number);
      case "in":
        return (f.value as Json[]).some((x) => (Array.isArray(v) ? v.includes(x) : v === x));
      default:
        throw new Error(`no reference for ${f.operator}`);
    }
  });
}

describe("errors map to gRPC codes as REST maps them to statuses", () => {
  const unknownCatalog = randomUUID();
  const otherOrg = randomUUID();

  it.each<[string, Partial<RestSearch>, number, Code]>([
    ["no topK", { topK: undefined }, 400, Code.InvalidArgument],
    ["topK 0", { topK: 0 }, 400, Code.InvalidArgument],
    ["no visual weight", { visual_weight: undefined }, 400, Code.InvalidArgument],
    ["a visual weight of 0", { visual_weight: 0 }, 400, Code.InvalidArgument],
    ["no similarity threshold", { similarity_threshold: undefined }, 400, Code.InvalidArgument],
    ["a threshold above 1", { similarity_threshold: 1.5 }, 400, Code.InvalidArgument],
    ["a blank query", { query: "  " }, 400, Code.InvalidArgument],
    ["a malformed catalog id", { catalogId: "nope" }, 400, Code.InvalidArgument],
    ["a wrongly typed filter value", { filters: [{ field: "price", operator: "gt", value: true }] }, 400, Code.InvalidArgument],
    ["an object as an eq value", { filters: [{ field: "price", operator: "eq", value: { a: 1 } }] }, 400, Code.InvalidArgument],
    ["a filter without a value", { filters: [{ field: "price", operator: "eq" }] }, 400, Code.InvalidArgument],
    ["an unknown catalog", { catalogId: unknownCatalog }, 404, Code.NotFound],
    ["another organization", { organizationId: otherOrg }, 403, Code.PermissionDenied],
  ])("search with %s", async (_name, extra, status, code) => {
    const body = searchRequest(extra);
    expect((await s.api.post("/search", body)).status).toBe(status);
    expect(await codeOf(search.searchProducts(toGrpcSearch(body), auth()))).toBe(code);
  });

  it.each<[string, Partial<RestRecs>, number, Code]>([
    ["no product id", { productId: "" }, 400, Code.InvalidArgument],
    ["topK above 500", { topK: 501 }, 400, Code.InvalidArgument],
    ["a visual weight above 1", { visualWeight: 1.01 }, 400, Code.InvalidArgument],
    ["an in filter with a non-list", { filters: [{ field: "colour", operator: "in", value: "red" }] }, 400, Code.InvalidArgument],
    ["an unknown product", { productId: "no-such-sku" }, 404, Code.NotFound],
    ["an unknown catalog", { catalogId: unknownCatalog }, 404, Code.NotFound],
    ["another organization", { organizationId: otherOrg }, 403, Code.PermissionDenied],
  ])("recs with %s", async (_name, extra, status, code) => {
    const body = recsRequest(extra);
    expect((await s.api.post("/recs", body)).status).toBe(status);
    expect(await codeOf(recs.getRecommendations(toGrpcRecs(body), auth()))).toBe(code);
  });

  it("an unspecified operator is INVALID_ARGUMENT", async () => {
    const filters = [{ field: "colour", operator: Filter_Operator.OPERATOR_UNSPECIFIED, value: fromJson(ValueSchema, "red") }];
    expect(await codeOf(search.searchProducts({ ...toGrpcSearch(searchRequest()), filters }, auth()))).toBe(Code.InvalidArgument);
    expect(await codeOf(recs.getRecommendations({ ...toGrpcRecs(recsRequest()), filters }, auth()))).toBe(Code.InvalidArgument);
  });

  // Values a protobuf Value can carry and JSON cannot (so REST never sends them); filters.ts means
  // them to be rejected as invalid_argument like any other wrong value.
  const number = (n: number): Value => create(ValueSchema, { kind: { case: "numberValue", value: n } });
  it.each<[string, Filter_Operator, Value]>([
    ["NaN", Filter_Operator.gt, number(Number.NaN)],
    ["Infinity", Filter_Operator.eq, number(Number.POSITIVE_INFINITY)],
    ["-Infinity inside an in list", Filter_Operator.in, create(ValueSchema, { kind: { case: "listValue", value: { values: [number(1), number(Number.NEGATIVE_INFINITY)] } } })],
    ["Value with no kind set", Filter_Operator.eq, create(ValueSchema)],
  ])("a filter value that is a %s is INVALID_ARGUMENT, not INTERNAL", async (_name, operator, value) => {
    const filters = [{ field: "price", operator, value }];
    expect(await codeOf(search.searchProducts({ ...toGrpcSearch(searchRequest()), filters }, auth()))).toBe(Code.InvalidArgument);
    expect(await codeOf(recs.getRecommendations({ ...toGrpcRecs(recsRequest()), filters }, auth()))).toBe(Code.InvalidArgument);
  });

  it("recs of a product without vectors yet is FAILED_PRECONDITION (400 over REST)", async () => {
    const fresh = syntheticProducts(text, 1, { seed: 42, idOf: () => "fresh" });
    await postProducts(s, catalogId, fresh);
    const body = recsRequest({ productId: "fresh" });
    expect((await s.api.post("/recs", body)).status).toBe(400);
    expect(await codeOf(recs.getRecommendations(toGrpcRecs(body), auth()))).toBe(Code.FailedPrecondition);
  });

  it("a missing key is UNAUTHENTICATED, a key without the search scope PERMISSION_DENIED", async () => {
    expect(await codeOf(search.searchProducts(toGrpcSearch(searchRequest())))).toBe(Code.Unauthenticated);
    expect(await codeOf(recs.getRecommendations(toGrpcRecs(recsRequest()), auth("vtr_not-a-key")))).toBe(Code.Unauthenticated);
    const readOnly = await s.server.createKey(s.org, ["read"]);
    expect(await codeOf(search.searchProducts(toGrpcSearch(searchRequest()), auth(readOnly)))).toBe(Code.PermissionDenied);
    expect(await codeOf(recs.getRecommendations(toGrpcRecs(recsRequest()), auth(readOnly)))).toBe(Code.PermissionDenied);
  });

  it("a deleted catalog is NOT_FOUND", async () => {
    const doomed = await createCatalog(s, "doomed");
    expect((await s.api.delete(`/organizations/${s.org}/catalogs/${doomed}`)).status).toBe(200);
    expect(await codeOf(search.searchProducts(toGrpcSearch(searchRequest({ catalogId: doomed })), auth()))).toBe(Code.NotFound);
    expect(await codeOf(recs.getRecommendations(toGrpcRecs(recsRequest({ catalogId: doomed })), auth()))).toBe(Code.NotFound);
  });
});

describe("ReindexCatalog over gRPC", () => {
  it("rebuilds with the admin key, answering the products indexed; PERMISSION_DENIED for an organization's key", async () => {
    const catalogs = createClient(CatalogService, createGrpcTransport({ baseUrl: s.server.grpcUrl }));
    const res = await catalogs.reindexCatalog({ organizationId: s.org, catalogId }, auth(s.server.adminKey));
    expect(res.status).toBe("success");
    expect(res.indexed).toBe(specs.length);
    expect(await codeOf(catalogs.reindexCatalog({ organizationId: s.org, catalogId }, auth()))).toBe(Code.PermissionDenied);
    expect(await codeOf(catalogs.reindexCatalog({ organizationId: s.org, catalogId: randomUUID() }, auth(s.server.adminKey)))).toBe(Code.NotFound);
    // Same answers after the rebuild.
    const body = searchRequest({ topK: 15 });
    const grpc = await search.searchProducts(toGrpcSearch(body), auth());
    expect(grpc.results.map((r) => ({ productId: r.productId, score: r.score, metadata: r.metadata }))).toEqual((await s.api.post("/search", body)).body.results);
    expectHits(grpc.results, ranking(map, indexed(), textQuery(text, body.query), 0.5).filter((h) => h.score >= 0).slice(0, 15));
  });
});

