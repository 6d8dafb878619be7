import { Code, createClient } from "@connectrpc/connect";
import type { Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/grpc/health/v1/health_pb.js";
import { CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";
import { startTcpProxy } from "./tcp-proxy.js";
import type { TcpProxy } from "./tcp-proxy.js";
import { codeOf } from "../support/connect-errors.js";

// The service reaches Redis through a proxy the test can cut, as if Redis went away.
let redisProxy: TcpProxy;
let server: TestServer;
let grpcHealth: Client<typeof Health>;
let connectHealth: Client<typeof Health>;
const { SERVING, NOT_SERVING } = HealthCheckResponse_ServingStatus;

beforeAll(async () => {
  const redis = new URL(inject("redisUrl")!);
  redisProxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port) });
  server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${redisProxy.port}` });
  grpcHealth = createClient(Health, createGrpcTransport({ baseUrl: server.grpcUrl }));
  connectHealth = createClient(Health, createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }));
});
afterAll(async () => {
  await redisProxy?.restore();
  await server?.close();
  await redisProxy?.close();
});

const get = async (path: string) => {
  const response = await fetch(server.restUrl + path);
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
};

describe("GET /healthz and /readyz (no API key)", () => {
  it("answers liveness", async () => {
    const response = await get("/healthz");
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: "ok" });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("answers ready with every check when MySQL, Redis and the text model are there", async () => {
    const response = await get("/readyz");
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: "ready",
      checks: { mysql: { status: "ok" }, redis: { status: "ok" }, models: { status: "ok" }, shutdown: { status: "ok" } },
      workers: { configured: 0, ready: 0 },
    });
    expect(response.headers.get("cache-control")).toBe("no-store");
  });
});

describe("grpc.health.v1.Health on both listeners (no API key)", () => {
  it("answers Check for the whole service and for each named service", async () => {
    for (const client of [grpcHealth, connectHealth]) {
      expect((await client.check({ service: "" })).status).toBe(SERVING);
      expect((await client.check({ service: "vitrine.v1.CatalogService" })).status).toBe(SERVING);
      expect((await client.check({ service: "vitrine.v1.SearchService" })).status).toBe(SERVING);
      expect(await codeOf(client.check({ service: "no.such.Service" }))).toBe(Code.NotFound);
    }
  });

  it("lists every service's status", async () => {
    const { statuses } = await grpcHealth.list({});
    expect(Object.keys(statuses)).toEqual(expect.arrayContaining(["", "vitrine.v1.CatalogService", "vitrine.v1.ApiKeyService"]));
    expect(Object.values(statuses).every((s) => s.status === SERVING)).toBe(true);
  });

  it("streams the current status at once on Watch", async () => {
    const abort = new AbortController();
    const first = await (async () => {
      for await (const message of grpcHealth.watch({ service: "" }, { signal: abort.signal })) return message;
      return undefined;
    })();
    abort.abort();
    expect(first?.status).toBe(SERVING);
  });

  it("leaves every other service behind the API key", async () => {
    const catalogs = createClient(CatalogService, createGrpcTransport({ baseUrl: server.grpcUrl }));
    expect(await codeOf(catalogs.listCatalogs({ organizationId: crypto.randomUUID() }))).toBe(Code.Unauthenticated);
  });
});

describe("when Redis goes away", () => {
  it("answers 503 naming the failing check, NOT_SERVING over gRPC, and recovers when Redis is back", async () => {
    await redisProxy.cut();
    try {
      const response = await waitFor(async () => {
        const r = await get("/readyz");
        return r.status === 503 ? r : undefined;
      }, 10_000, "/readyz to answer 503");
      expect(response.body).toMatchObject({
        status: "not ready",
        checks: { mysql: { status: "ok" }, redis: { status: "failing" }, models: { status: "ok" } },
      });
      expect(typeof response.body.checks.redis.error).toBe("string");
      // Liveness is about the process, which is fine.
      expect((await get("/healthz")).status).toBe(200);
      expect((await grpcHealth.check({ service: "" })).status).toBe(NOT_SERVING);

      const metrics = await (await fetch(`${server.restUrl}/metrics`)).text();
      expect(counterValue(metrics, 'vitrine_redis_errors_total{source="readiness"}')).toBeGreaterThan(0);
    } finally {
      await redisProxy.restore();
    }
    await waitFor(async () => (await get("/readyz")).status === 200, 15_000, "/readyz to answer 200 again");
    expect((await grpcHealth.check({ service: "" })).status).toBe(SERVING);
  });
});

function counterValue(exposition: string, series: string): number {
  const line = exposition.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
