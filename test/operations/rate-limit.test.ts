import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { expectErrorObject } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import { createApiApp } from "../../src/apps/api/api-app.js";
import type { TestServer } from "../support/test-server.js";

// One call a second, bursts of 3: a key's fourth quick call is refused, and a second later it has
// a token again.
let server: TestServer;
let grpcCatalogs: Client<typeof CatalogService>;
let connectCatalogs: Client<typeof CatalogService>;
const org = randomUUID();

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "3" });
  grpcCatalogs = createClient(CatalogService, createGrpcTransport({ baseUrl: server.grpcUrl }));
  connectCatalogs = createClient(CatalogService, createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }));
});
afterAll(() => server?.close());

/** A fresh key of its own, so each test starts with a full bucket. */
async function freshKey(): Promise<string> {
  // The admin key has a bucket too: let it refill between key creations.
  for (;;) {
    try {
      return await server.createKey(org);
    } catch (error) {
      if (!String(error).includes("429")) throw error;
      await sleep(1000);
    }
  }
}

const restList = (key: string) =>
  fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: key } }).then(async (r) => ({
    status: r.status,
    headers: r.headers,
    body: (await r.json()) as any,
  }));

async function errorOf(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}

describe("per-key rate limit", () => {
  it("answers 429 over REST in the Error object with Retry-After, then lets the key in again once the bucket refills", async () => {
    const key = await freshKey();
    for (let i = 0; i < 3; i++) expect((await restList(key)).status).toBe(200);
    const refused = await restList(key);
    expectErrorObject(refused, 429, "GET", `/organizations/${org}/catalogs`);
    expect(refused.body.message).toMatch(/rate limit/);
    const retryAfter = refused.headers.get("retry-after");
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(refused.headers.get("x-request-id")).toBeTruthy();

    await sleep(1100);
    expect((await restList(key)).status).toBe(200);
  });

  it("answers RESOURCE_EXHAUSTED over gRPC, with a retry-after trailer", async () => {
    const key = await freshKey();
    const options = { headers: { service_api_key: key } };
    for (let i = 0; i < 3; i++) await grpcCatalogs.listCatalogs({ organizationId: org }, options);
    const error = await errorOf(grpcCatalogs.listCatalogs({ organizationId: org }, options));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toMatch(/rate limit/);
    expect(error.metadata.get("retry-after")).toMatch(/^[1-9]\d*$/);
  });

  it("shares one bucket per key across REST, Connect and gRPC, and keeps keys apart", async () => {
    const key = await freshKey();
    const other = await freshKey();
    const options = { headers: { service_api_key: key } };
    await connectCatalogs.listCatalogs({ organizationId: org }, options);
    await grpcCatalogs.listCatalogs({ organizationId: org }, options);
    expect((await restList(key)).status).toBe(200);
    expect((await errorOf(connectCatalogs.listCatalogs({ organizationId: org }, options))).code).toBe(Code.ResourceExhausted);
    expect((await restList(key)).status).toBe(429);
    // Another key of the same organization is untouched.
    expect((await restList(other)).status).toBe(200);
  });

  it("limits calls without a key (the health service) per client address", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.grpcUrl }));
    let refused: ConnectError | undefined;
    for (let i = 0; i < 6 && !refused; i++) {
      refused = await health.check({ service: "" }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    }
    expect(refused?.code).toBe(Code.ResourceExhausted);
  });

  it("counts refusals in the metrics", async () => {
    const metrics = await (await fetch(`${server.restUrl}/metrics`)).text();
    const count = (door: string) => Number(/ (\d+)$/.exec(metrics.split("\n").find((l) => l.startsWith(`vitrine_rate_limited_total{door="${door}"}`)) ?? " 0")?.[1]);
    expect(count("rest")).toBeGreaterThanOrEqual(2);
    expect(count("grpc")).toBeGreaterThanOrEqual(2);
    expect(count("connect")).toBeGreaterThanOrEqual(1);
  });
});

/** A key with its own limit, created by the admin over REST (the admin's own bucket refills between tries). */
async function keyWithLimit(target: TestServer, rateLimitPerSecond: number): Promise<string> {
  for (;;) {
    const response = await fetch(`${target.restUrl}/organizations/${org}/keys`, {
      method: "POST",
      headers: { "content-type": "application/json", SERVICE_API_KEY: target.adminKey },
      body: JSON.stringify({ name: "own limit", scopes: ["read"], rateLimitPerSecond }),
    });
    if (response.status === 429) {
      await sleep(1000);
      continue;
    }
    const body = (await response.json()) as { key: string; apiKey: { rateLimitPerSecond?: number } };
    expect(response.status, JSON.stringify(body)).toBe(201);
    expect(body.apiKey.rateLimitPerSecond).toBe(rateLimitPerSecond);
    return body.key;
  }
}

const burstOf = (target: TestServer, key: string, calls: number) =>
  Promise.all(
    Array.from({ length: calls }, () => fetch(`${target.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: key } }).then((r) => r.status)),
  );

describe("a key's own limit, set by the admin at creation", () => {
  it("replaces the default: 0 exempts the key, n allows n a second in bursts of 2n", async () => {
    const free = await keyWithLimit(server, 0);
    expect(new Set(await burstOf(server, free, 12))).toEqual(new Set([200]));

    const own = await keyWithLimit(server, 2);
    const statuses = await burstOf(server, own, 6);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    const refused = await restList(own);
    expect(refused.status).toBe(429);
    expect(refused.body.message).toMatch(/at most 2 calls per second \(bursts of 4\)/);
    let listed: Response;
    while ((listed = await fetch(`${server.restUrl}/organizations/${org}/keys`, { headers: { SERVICE_API_KEY: server.adminKey } })).status === 429) {
      await sleep(1000);
    }
    const keys = ((await listed.json()) as { keys: { rateLimitPerSecond?: number }[] }).keys;
    expect(keys.map((k) => k.rateLimitPerSecond)).toContain(2);
  });

  it("refuses a limit that is not an integer from 0 to 1,000,000, creating nothing", async () => {
    for (const bad of [-1, 1.5, 1_000_001]) {
      let response: Response;
      do {
        response = await fetch(`${server.restUrl}/organizations/${org}/keys`, {
          method: "POST",
          headers: { "content-type": "application/json", SERVICE_API_KEY: server.adminKey },
          body: JSON.stringify({ name: "bad", scopes: ["read"], rateLimitPerSecond: bad }),
        });
        if (response.status === 429) await sleep(1000);
      } while (response.status === 429);
      expect(response.status).toBe(400);
    }
  });
});

describe("RATE_LIMIT_PER_SECOND=0", () => {
  it("turns the limit off", async () => {
    const unlimited = await startTestServer({ RATE_LIMIT_PER_SECOND: "0", RATE_LIMIT_BURST: "1" });
    try {
      const key = await unlimited.createKey(org);
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => fetch(`${unlimited.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: key } }).then((r) => r.status)),
      );
      expect(new Set(statuses)).toEqual(new Set([200]));
      // A key given its own limit is still held to it.
      const own = await keyWithLimit(unlimited, 1);
      expect((await burstOf(unlimited, own, 3)).sort()).toEqual([200, 200, 429]);
    } finally {
      await unlimited.close();
    }
  });
});

describe("several API processes", () => {
  it("share one bucket per key in Redis, and give the same answers", { timeout: 60_000 }, async () => {
    // A second service over the same MySQL database and Redis keys, as a second `npm start` behind
    // a balancer would be: its own interceptors and memory, nothing shared but the stores.
    const second = await createApiApp({ ...server.config, port: 0, grpcPort: 0 });
    try {
      const { restUrl } = await second.listen();
      const key = await freshKey();
      const list = (base: string) => fetch(`${base}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: key } });
      // Bursts of 3 in all: calls alternate between the two processes.
      const statuses = [];
      for (const base of [server.restUrl, restUrl, server.restUrl, restUrl]) statuses.push((await list(base)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      await sleep(1100);
      const [a, b] = await Promise.all([list(restUrl), sleep(50).then(() => list(server.restUrl))]);
      expect([a.status, b.status].sort()).toEqual([200, 429]);
      await sleep(1100);
      expect(await (await list(restUrl)).json()).toEqual(await (await sleep(1100).then(() => list(server.restUrl))).json());
    } finally {
      await second.close();
    }
  });

});
