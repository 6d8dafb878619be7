import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecommendationService } from "../../src/gen/vitrine/v1/recommendation_service_pb.js";
import { provisionMariadb, provisionRedis8 } from "../../src/provisioning/index.js";
import type { ProvisionedMariadb, ProvisionedRedis } from "../../src/provisioning/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";
import { freePort } from "../support/free-port.js";

// The service against a Redis 8 and a MariaDB of this test's own, each stopped and started again
// under load. The machine's shared servers are never touched.
const FAIL_FAST_MS = 250;

const redisDir = mkdtempSync(join(tmpdir(), "vitrine-outage-redis-"));
const mariadbDir = mkdtempSync(join(tmpdir(), "vitrine-outage-mariadb-"));
let redisPort: number;
let mariadbPort: number;
let redis: ProvisionedRedis | undefined;
let mariadb: ProvisionedMariadb | undefined;
let server: TestServer;
let api: RestClient;
let key: string;
const org = randomUUID();
let catalogId: string;

const startRedis = async () => (redis = await provisionRedis8({ cacheDir, port: redisPort, dataDir: redisDir }));
const startMariadb = async () => (mariadb = await provisionMariadb({ cacheDir, port: mariadbPort, dataDir: mariadbDir }));

beforeAll(async () => {
  [redisPort, mariadbPort] = [await freePort(), await freePort()];
  await Promise.all([startRedis(), startMariadb()]);
  server = await startTestServer({
    REDIS_URL: redis!.url,
    MYSQL_URL: `${mariadb!.url}vitrine_outage`,
    // Keys come from MySQL on every call, so a MySQL outage shows on the first call.
    API_KEY_CACHE_MS: "0",
  });
  key = await server.createKey(org);
  api = restClient(server.restUrl, key);
  catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "outage" })).body.id;
}, 180_000);

afterAll(async () => {
  if (redis === undefined) await startRedis().catch(() => undefined);
  if (mariadb === undefined) await startMariadb().catch(() => undefined);
  await server?.close().catch(() => undefined);
  await redis?.stop();
  await mariadb?.stop();
  rmSync(redisDir, { recursive: true, force: true });
  rmSync(mariadbDir, { recursive: true, force: true });
});

interface Timed {
  status: number;
  ms: number;
  retryAfter: string | null;
  body: any;
}

async function timed(call: () => Promise<{ status: number; headers: Headers; body: unknown }>): Promise<Timed> {
  const started = performance.now();
  const res = await call();
  return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.get("retry-after"), body: res.body };
}

/** `workers` callers in a loop until `stop` is set; every answer, timed. */
function load(call: () => Promise<Timed>, workers = 4): { stop: () => Promise<Timed[]> } {
  let running = true;
  const results: Timed[] = [];
  const loops = Array.from({ length: workers }, async () => {
    while (running) {
      results.push(await call());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

const readyCheck = async (name: string) => {
  const body = (await (await fetch(`${server.restUrl}/readyz`)).json()) as { checks: Record<string, { status: string }> };
  return body.checks[name]?.status;
};

function expectFastUnavailable(during: Timed[], store: RegExp): void {
  const unavailable = during.filter((r) => r.status === 503);
  expect(unavailable.length).toBeGreaterThan(10);
  for (const r of unavailable) {
    expect(r.retryAfter).toBe("1");
    expect(r.body.message).toMatch(store);
    expect(r.body.status).toBe(503);
  }
  expect(during.filter((r) => r.status >= 500 && r.status !== 503)).toEqual([]);
  const slow = unavailable.filter((r) => r.ms > FAIL_FAST_MS).map((r) => Math.round(r.ms));
  expect(slow, "503s slower than 250 ms").toEqual([]);
}

describe("Redis down", () => {
  it("answers 503 with Retry-After within 250 ms, says so in readiness and metrics, and the first call after recovery succeeds", { timeout: 120_000 }, async () => {
    const recs = () => timed(() => api.post("/recs", { organizationId: org, catalogId, productId: "absent" }));
    expect((await recs()).status).toBe(404);

    const running = load(recs);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis!.stop();
    redis = undefined;
    await waitFor(async () => (await readyCheck("redis")) === "failing", 10_000, "readiness to report Redis");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // Calls caught by the stop itself: refused or answered, none left hanging for seconds.
    const across = await running.stop();
    expect(across.filter((r) => r.status !== 404 && r.status !== 503)).toEqual([]);
    expect(Math.max(...across.map((r) => r.ms))).toBeLessThan(1000);

    const during = load(recs);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const answers = await during.stop();
    expectFastUnavailable(answers, /Redis/);

    // gRPC says the same with its own code and a retry-after trailer.
    const client = createClient(RecommendationService, createGrpcTransport({ baseUrl: server.grpcUrl }));
    const grpcStarted = performance.now();
    const grpcError = await client
      .getRecommendations(
        { organizationId: org, catalogId, productId: "absent" },
        { headers: { service_api_key: key } },
      )
      .then(() => undefined, (error: unknown) => ConnectError.from(error));
    expect(performance.now() - grpcStarted).toBeLessThan(FAIL_FAST_MS);
    expect(grpcError?.code).toBe(14); // UNAVAILABLE
    expect(grpcError?.metadata.get("retry-after")).toBe("1");

    const metrics = await (await fetch(`${server.restUrl}/metrics`)).text();
    expect(metrics).toMatch(/vitrine_redis_errors_total\{source="rpc"\} [1-9]/);
    expect(metrics).toMatch(/vitrine_http_requests_total\{[^}]*status="503"[^}]*\} [1-9]/);

    await startRedis();
    await waitFor(async () => (await readyCheck("redis")) === "ok", 15_000, "readiness to report Redis back");
    expect((await recs()).status).toBe(404);
  });
});

describe("MySQL down", () => {
  it("answers 503 with Retry-After within 250 ms, says so in readiness, and the first call after recovery succeeds", { timeout: 180_000 }, async () => {
    const list = () => timed(() => api.get(`/organizations/${org}/catalogs`));
    expect((await list()).status).toBe(200);

    await mariadb!.stop();
    mariadb = undefined;
    await waitFor(async () => (await readyCheck("mysql")) === "failing", 10_000, "readiness to report MySQL");

    const during = load(list);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expectFastUnavailable(await during.stop(), /MySQL/);

    await startMariadb();
    await waitFor(async () => (await readyCheck("mysql")) === "ok", 30_000, "readiness to report MySQL back");
    expect((await list()).status).toBe(200);
  });
});
