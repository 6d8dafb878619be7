import { randomUUID } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import type { Client, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiKeyService } from "../../src/gen/vitrine/v1/api_key_service_pb.js";
import { Catalog_Status, CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { Rank } from "../../src/gen/vitrine/v1/common_pb.js";
import { Product_Status, ProductService } from "../../src/gen/vitrine/v1/product_service_pb.js";
import { RecommendationService } from "../../src/gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../../src/gen/vitrine/v1/search_service_pb.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { codeOf } from "../support/connect-errors.js";

let server: TestServer;
let grpc: Transport;
const org = randomUUID();
let key: string;
let catalogs: Client<typeof CatalogService>;
let products: Client<typeof ProductService>;
const auth = () => ({ headers: { service_api_key: key } });

beforeAll(async () => {
  server = await startTestServer();
  grpc = createGrpcTransport({ baseUrl: server.grpcUrl });
  key = await server.createKey(org);
  catalogs = createClient(CatalogService, grpc);
  products = createClient(ProductService, grpc);
});
afterAll(() => server?.close());

describe("over gRPC (HTTP/2)", () => {
  it("runs the whole catalog and product lifecycle", async () => {
    const { catalog } = await catalogs.createCatalog({ organizationId: org, name: "grpc", description: "d" }, auth());
    expect(catalog).toMatchObject({ name: "grpc", organizationId: org, productCount: 0 });
    const catalogId = catalog!.id;

    const listed = await catalogs.listCatalogs({ organizationId: org }, auth());
    expect(listed.catalogs.find((c) => c.id === catalogId)?.status).toBe(Catalog_Status.EMPTY);
    expect((await catalogs.getCatalog({ organizationId: org, catalogId }, auth())).catalog?.status).toBeUndefined();

    const updated = await catalogs.updateCatalog({ organizationId: org, id: catalogId, description: "e" }, auth());
    expect(updated.catalog).toMatchObject({ name: "grpc", description: "e" });
    expect(updated.catalog?.updatedAt).toBeDefined();

    const ack = await products.createProducts(
      {
        organizationId: org,
        catalogId,
        products: [
          { id: "g1", imageUrl: "https://x.example/1.jpg", descriptor: "ONE", metadata: { k: "v" } },
          { id: "g2", imageUrl: "https://x.example/2.jpg" },
        ],
      },
      auth(),
    );
    expect(ack).toMatchObject({ status: "success", count: 2 });

    const { product } = await products.getProduct({ organizationId: org, catalogId, productId: "g1" }, auth());
    expect(product).toMatchObject({ id: "g1", descriptor: "one", metadata: { k: "v" }, status: Product_Status.PROCESSING, rank: Rank.NO_BOOST });

    await products.updateProductRank({ organizationId: org, catalogId, productId: "g1", rank: Rank.SUPER_BOOST }, auth());
    const page = await products.listProducts({ organizationId: org, catalogId, rank: Rank.SUPER_BOOST, pageSize: 10 }, auth());
    expect(page.data.map((p) => p.id)).toEqual(["g1"]);
    expect(page.pagination).toMatchObject({ totalItems: 1, totalPages: 1, currentPage: 1, pageSize: 10 });

    const since = await products.listProducts(
      { organizationId: org, catalogId, createdAfter: timestampFromDate(new Date(Date.now() + 60_000)) },
      auth(),
    );
    expect(since.pagination?.totalItems).toBe(0);

    await products.deleteProduct({ organizationId: org, catalogId, productId: "g1" }, auth());
    expect((await products.deleteProducts({ organizationId: org, catalogId, productIds: [] }, auth())).count).toBe(1);
    expect((await catalogs.getCatalog({ organizationId: org, catalogId }, auth())).catalog?.productCount).toBe(0);

    await catalogs.deleteCatalog({ organizationId: org, catalogId }, auth());
    expect(await codeOf(catalogs.getCatalog({ organizationId: org, catalogId }, auth()))).toBe(Code.NotFound);
  });

  it("maps every error kind to its gRPC status code", async () => {
    const { catalog } = await catalogs.createCatalog({ organizationId: org, name: "codes" }, auth());
    const catalogId = catalog!.id;
    expect(await codeOf(catalogs.listCatalogs({ organizationId: org }))).toBe(Code.Unauthenticated);
    expect(await codeOf(catalogs.listCatalogs({ organizationId: org }, { headers: { service_api_key: "bad" } }))).toBe(
      Code.Unauthenticated,
    );
    expect(await codeOf(catalogs.listCatalogs({ organizationId: randomUUID() }, auth()))).toBe(Code.PermissionDenied);
    expect(await codeOf(catalogs.createCatalog({ organizationId: org, name: "codes" }, auth()))).toBe(Code.AlreadyExists);
    expect(await codeOf(catalogs.getCatalog({ organizationId: org, catalogId: randomUUID() }, auth()))).toBe(Code.NotFound);
    expect(await codeOf(catalogs.getCatalog({ organizationId: org, catalogId: "x" }, auth()))).toBe(Code.InvalidArgument);
    expect(await codeOf(products.getProduct({ organizationId: org, catalogId, productId: "none" }, auth()))).toBe(
      Code.NotFound,
    );
    expect(
      await codeOf(products.createProducts({ organizationId: org, catalogId, products: [{ id: "a", imageUrl: "nope" }] }, auth())),
    ).toBe(Code.InvalidArgument);
    expect(await codeOf(products.listProducts({ organizationId: org, catalogId, pageSize: 101 }, auth()))).toBe(
      Code.InvalidArgument,
    );
    const search = createClient(SearchService, grpc);
    expect(await codeOf(search.searchProducts({ organizationId: org, catalogId }, auth()))).toBe(Code.InvalidArgument);
    const recs = createClient(RecommendationService, grpc);
    expect(await codeOf(recs.getRecommendations({ organizationId: org, catalogId, productId: "a" }, auth()))).toBe(
      Code.NotFound,
    );
  });

  it("refuses messages larger than the request limit", async () => {
    const { catalog } = await catalogs.createCatalog({ organizationId: org, name: "big" }, auth());
    const huge = Array.from({ length: 1200 }, (_, i) => ({
      id: `p${i}`,
      imageUrl: "https://x.example/p.jpg",
      descriptor: "x".repeat(9000),
    }));
    // Node's HTTP/2 client gives up on its own past 10 MB of buffered session data; a larger
    // budget lets the message actually reach the server's limit.
    const roomy = createClient(ProductService, createGrpcTransport({ baseUrl: server.grpcUrl, nodeOptions: { maxSessionMemory: 64 } }));
    const code = await codeOf(roomy.createProducts({ organizationId: org, catalogId: catalog!.id, products: huge }, auth()));
    expect(code).toBe(Code.ResourceExhausted);
    expect((await catalogs.getCatalog({ organizationId: org, catalogId: catalog!.id }, auth())).catalog?.productCount).toBe(0);
  });

  it("manages keys with the admin key only", async () => {
    const keys = createClient(ApiKeyService, grpc);
    const admin = { headers: { service_api_key: server.adminKey } };
    const other = randomUUID();
    const created = await keys.createApiKey({ organizationId: other, name: "g", scopes: ["read"] }, admin);
    expect(created.key).toMatch(/^vtr_/);
    expect((await keys.listApiKeys({ organizationId: other }, admin)).keys.map((k) => k.id)).toEqual([created.apiKey!.id]);
    expect(await codeOf(keys.listApiKeys({ organizationId: org }, auth()))).toBe(Code.PermissionDenied);
    await keys.revokeApiKey({ organizationId: other, keyId: created.apiKey!.id }, admin);
    expect(
      await codeOf(createClient(CatalogService, grpc).listCatalogs({ organizationId: other }, { headers: { service_api_key: created.key } })),
    ).toBe(Code.Unauthenticated);
  });
});

describe("over Connect (HTTP/1.1, JSON) on the REST port", () => {
  it("serves the same RPCs", async () => {
    const transport = createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1", useBinaryFormat: false });
    const client = createClient(CatalogService, transport);
    const { catalog } = await client.createCatalog({ organizationId: org, name: "connect" }, auth());
    expect((await client.getCatalog({ organizationId: org, catalogId: catalog!.id }, auth())).catalog?.name).toBe("connect");
    expect(await codeOf(client.getCatalog({ organizationId: org, catalogId: catalog!.id }))).toBe(Code.Unauthenticated);
  });
});

describe("response compression", () => {
  // Connect's unary protocol compresses with plain HTTP Content-Encoding, so fetch shows it.
  const listProducts = async (catalogId: string) => {
    const response = await fetch(`${server.restUrl}/vitrine.v1.ProductService/ListProducts`, {
      method: "POST",
      headers: { "content-type": "application/json", "accept-encoding": "gzip", service_api_key: key },
      body: JSON.stringify({ organizationId: org, catalogId, pageSize: 100 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: unknown[] };
    return { encoding: response.headers.get("content-encoding"), count: body.data.length };
  };

  it("compresses large answers for callers that accept it, and leaves small ones alone", async () => {
    const { catalog } = await catalogs.createCatalog({ organizationId: org, name: "compression" }, auth());
    const catalogId = catalog!.id;
    const filler = "lorem ipsum dolor sit amet ".repeat(40);
    const create = (from: number, count: number) =>
      products.createProducts(
        {
          organizationId: org,
          catalogId,
          products: Array.from({ length: count }, (_, i) => ({ id: `p-${from + i}`, imageUrl: `https://x.example/${from + i}.jpg`, descriptor: filler })),
        },
        auth(),
      );
    // 10 products with 1 KB descriptors: an answer of about 11 KB, which Connect's default
    // threshold (1 KiB) would compress.
    await create(0, 10);
    expect(await listProducts(catalogId)).toEqual({ encoding: null, count: 10 });
    // 100 of them: more than 64 KiB.
    await create(10, 90);
    expect(await listProducts(catalogId)).toEqual({ encoding: "gzip", count: 100 });
  });
});

describe("over gRPC-Web (HTTP/1.1) on the REST port", () => {
  it("serves the same RPCs with the same status codes", async () => {
    const client = createClient(CatalogService, createGrpcWebTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }));
    const { catalog } = await client.createCatalog({ organizationId: org, name: "grpc-web" }, auth());
    expect((await client.listCatalogs({ organizationId: org }, auth())).catalogs.some((c) => c.id === catalog!.id)).toBe(true);
    expect(await codeOf(client.createCatalog({ organizationId: org, name: "grpc-web" }, auth()))).toBe(Code.AlreadyExists);
  });
});

describe("the key, checked first on every door", () => {
  it("is authenticated once per call, and the checked key still decides who may do what", async () => {
    const readOnly = await server.createKey(org, ["read"]);
    const other = randomUUID();
    const authenticate = vi.spyOn(server.app.core.apiKeys, "authenticate");
    try {
      const doors = {
        grpc,
        connect: createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }),
        "grpc-web": createGrpcWebTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }),
      };
      for (const [door, transport] of Object.entries(doors)) {
        const client = createClient(CatalogService, transport);
        authenticate.mockClear();
        expect((await client.listCatalogs({ organizationId: org }, { headers: { service_api_key: readOnly } })).catalogs, door).toBeDefined();
        expect(authenticate, door).toHaveBeenCalledTimes(1);
        // Scopes and organizations are still checked against the message, after the key.
        const write = client.createCatalog({ organizationId: org, name: `k-${door}` }, { headers: { service_api_key: readOnly } });
        expect(await codeOf(write), door).toBe(Code.PermissionDenied);
        expect(await codeOf(client.listCatalogs({ organizationId: other }, { headers: { service_api_key: readOnly } })), door).toBe(Code.PermissionDenied);
      }
      authenticate.mockClear();
      const rest = await fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { service_api_key: readOnly } });
      expect(rest.status).toBe(200);
      expect(authenticate).toHaveBeenCalledTimes(1);
      const restWrite = await fetch(`${server.restUrl}/organizations/${org}/catalogs`, {
        method: "POST",
        headers: { service_api_key: readOnly, "content-type": "application/json" },
        body: JSON.stringify({ name: "k-rest" }),
      });
      expect(restWrite.status).toBe(403);
    } finally {
      authenticate.mockRestore();
    }
  });
});
