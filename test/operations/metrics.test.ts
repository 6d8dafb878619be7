import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { cacheDir } from "../support/cache-dir.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import { startTestServerWithWorker } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";

// One real worker process, so embedding times travel from it to the service's /metrics.
let server: TestServer;
let images: ImageServer;
let api: RestClient;
let key: string;
const org = randomUUID();

beforeAll(async () => {
  const photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  images.route("/coffee.png", serveBytes(photos.coffee!, "image/png"));
  images.route("/cat.png", serveBytes(photos.chelsea!, "image/png"));
  server = await startTestServerWithWorker();
  key = await server.createKey(org);
  api = restClient(server.restUrl, key);
}, 180_000);
afterAll(async () => {
  await server?.close();
  await images?.close();
});

async function scrape(): Promise<{ text: string; value(name: string, labels?: Record<string, string>): number }> {
  const response = await fetch(`${server.restUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return {
    text,
    value(name, labels = {}) {
      // Sum of the series of `name` whose labels include all of `labels`.
      let sum = 0;
      for (const line of text.split("\n")) {
        const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
        if (!match || match[1] !== name) continue;
        const have = Object.fromEntries([...(match[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
        if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(match[4]);
      }
      return sum;
    },
  };
}

describe("GET /metrics (Prometheus text format, no API key)", () => {
  it("counts REST requests by route pattern and status, never by raw URL", async () => {
    const route = "/organizations/:organization_id/catalogs";
    const before = await scrape();
    const ok = { method: "GET", route, status: "200" };
    await api.get(`/organizations/${org}/catalogs`);
    await api.get(`/organizations/${org}/catalogs`);
    await api.get(`/no/such/route/${org}`);
    const after = await scrape();

    expect(after.value("vitrine_http_requests_total", ok) - before.value("vitrine_http_requests_total", ok)).toBe(2);
    expect(after.value("vitrine_http_request_duration_seconds_count", ok)).toBe(after.value("vitrine_http_requests_total", ok));
    expect(after.value("vitrine_http_request_duration_seconds_bucket", { ...ok, le: "+Inf" })).toBe(after.value("vitrine_http_requests_total", ok));
    const unmatched = { method: "GET", route: "unmatched", status: "404" };
    expect(after.value("vitrine_http_requests_total", unmatched) - before.value("vitrine_http_requests_total", unmatched)).toBe(1);
    // No identifier from a URL ever becomes a label.
    expect(after.text).not.toContain(org);
  });

  it("counts RPCs by door, service, method and code", async () => {
    const labels = (door: string, code: string) => ({ door, service: "vitrine.v1.CatalogService", method: "ListCatalogs", code });
    const before = await scrape();
    const catalogs = createClient(CatalogService, createGrpcTransport({ baseUrl: server.grpcUrl }));
    await catalogs.listCatalogs({ organizationId: org }, { headers: { service_api_key: key } });
    const denied = await catalogs.listCatalogs({ organizationId: org }).catch((e: unknown) => ConnectError.from(e));
    expect((denied as ConnectError).code).toBe(Code.Unauthenticated);
    await api.get(`/organizations/${org}/catalogs`);
    const after = await scrape();

    const delta = (l: Record<string, string>) => after.value("vitrine_rpc_requests_total", l) - before.value("vitrine_rpc_requests_total", l);
    expect(delta(labels("grpc", "OK"))).toBe(1);
    expect(delta(labels("grpc", "UNAUTHENTICATED"))).toBe(1);
    expect(delta(labels("rest", "OK"))).toBe(1);
    expect(after.value("vitrine_rpc_duration_seconds_count", labels("grpc", "OK"))).toBeGreaterThanOrEqual(1);
  });

  it("exposes products by status, embedding times from the worker process, and process metrics", async () => {
    const catalog = (await api.post(`/organizations/${org}/catalogs`, { name: `m-${randomUUID()}` })).body.id as string;
    const base = `/organizations/${org}/catalogs/${catalog}`;
    const created = await api.post(`${base}/products`, [
      { id: "coffee", imageUrl: images.url("/coffee.png"), descriptor: "a cup of coffee" },
      { id: "cat", imageUrl: images.url("/cat.png"), descriptor: "a cat" },
    ]);
    expect(created.status).toBe(202);

    const settled = await waitFor(
      async () => {
        const metrics = await scrape();
        return metrics.value("vitrine_products", { status: "PROCESSED" }) === 2 && metrics.value("vitrine_embedding_seconds_count") >= 2
          ? metrics
          : undefined;
      },
      60_000,
      "both products processed and their embedding times exported",
    );
    expect(settled.value("vitrine_products", { status: "PROCESSING" })).toBe(0);
    expect(settled.value("vitrine_products", { status: "ERROR" })).toBe(0);
    expect(settled.value("vitrine_processing_products_total", { outcome: "processed" })).toBeGreaterThanOrEqual(2);
    // Embedding a photo takes real time: the histogram's sum is above zero and below a minute.
    const sum = settled.value("vitrine_embedding_seconds_sum");
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(60);
    expect(settled.value("process_cpu_user_seconds_total")).toBeGreaterThan(0);

    // Products of a deleted catalog are no one's work any more and leave the counts.
    await api.delete(base);
    expect((await scrape()).value("vitrine_products", { status: "PROCESSED" })).toBe(0);
  });
});
