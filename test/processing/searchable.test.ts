// The whole way: real photos fetched, embedded by the real models in a worker process, indexed in
// Redis by the worker, and found by search and recommendations.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheDir } from "../support/cache-dir.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import type { SamplePhotoName } from "../support/sample-photos.js";
import { startTestServerWithWorker } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";

let server: TestServer;
let images: ImageServer;
let api: RestClient;
const org = randomUUID();

const PRODUCTS: [string, SamplePhotoName, string][] = [
  ["moto-l", "motorcycle_left", "red motorcycle, left view"],
  ["moto-r", "motorcycle_right", "red motorcycle, right view"],
  ["cat", "chelsea", "tabby cat"],
  ["coffee", "coffee", "cup of coffee"],
  ["rocket", "rocket", "rocket on the launch pad"],
  ["astronaut", "astronaut", "astronaut portrait"],
];

beforeAll(async () => {
  const photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  for (const [, photo] of PRODUCTS) images.route(`/${photo}`, serveBytes(photos[photo], "image/png"));
  server = await startTestServerWithWorker();
  api = restClient(server.restUrl, await server.createKey(org));
}, 180_000);
afterAll(async () => {
  await server?.close();
  await images?.close();
});

describe("processed products are searchable", () => {
  it("finds products by their words and photos once the worker has processed them", { timeout: 120_000 }, async () => {
    const catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "photos" })).body.id as string;
    const catalog = `/organizations/${org}/catalogs/${catalogId}`;
    await api.post(
      `${catalog}/products`,
      PRODUCTS.map(([id, photo, descriptor]) => ({ id, imageUrl: images.url(`/${photo}`), descriptor, metadata: { kind: id.split("-")[0] } })),
    );
    const search = (query: string, extra: object = {}) =>
      api.post("/search", { organizationId: org, catalogId, query, topK: 6, visual_weight: 0.5, similarity_threshold: 0, ...extra });

    // Searchable as soon as processed: the worker indexes each batch itself.
    const found = await waitFor(
      async () => {
        if ((await api.get(`${catalog}/progress`)).body.processed !== PRODUCTS.length) return undefined;
        const res = await search("motorcycle");
        return res.body.results?.length >= 2 ? res.body.results : undefined;
      },
      90_000,
      "all products to be searchable",
    );
    expect(found.slice(0, 2).map((r: { productId: string }) => r.productId).sort()).toEqual(["moto-l", "moto-r"]);
    expect((await search("cat")).body.results[0].productId).toBe("cat");

    const recs = await api.post("/recs", { organizationId: org, catalogId, productId: "moto-l", topK: 5, visualWeight: 0.5 });
    expect(recs.status).toBe(200);
    const ids = recs.body.results.map((r: { productId: string }) => r.productId);
    expect(ids).not.toContain("moto-l");
    expect(ids[0]).toBe("moto-r");

    const filtered = await search("motorcycle", { filters: [{ field: "kind", operator: "ne", value: "moto" }] });
    expect(filtered.body.results.map((r: { productId: string }) => r.productId)).not.toContain("moto-l");
    expect(filtered.body.results.length).toBeGreaterThan(0);
    const all = await api.post("/recs", { organizationId: org, catalogId, productId: "cat", topK: 10 });
    expect(all.body.results).toHaveLength(PRODUCTS.length - 1);
  });
});
