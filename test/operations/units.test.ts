import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import { describe, expect, inject, it } from "vitest";
import { Readiness, requestIdOf, TokenBuckets } from "../../src/operations/index.js";
import { storeOf } from "../../src/storage/index.js";

const silent = { info() {}, warn() {}, error() {} };

describe("token buckets", () => {
  function clock() {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  }

  it("allows a burst, then refuses with a whole-second Retry-After, then refills at the rate", () => {
    const time = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 2, burst: 3, now: time.now });
    expect([1, 2, 3].map(() => buckets.take("k").allowed)).toEqual([true, true, true]);
    expect(buckets.take("k")).toEqual({ allowed: false, retryAfterSeconds: 1 });
    time.advance(499);
    expect(buckets.take("k").allowed).toBe(false);
    time.advance(1);
    expect(buckets.take("k").allowed).toBe(true);
    expect(buckets.take("k").allowed).toBe(false);
    // A long rest refills up to the burst, no further.
    time.advance(60_000);
    expect([1, 2, 3, 4].map(() => buckets.take("k").allowed)).toEqual([true, true, true, false]);
  });

  it("keeps each key's bucket apart", () => {
    const time = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 1, burst: 1, now: time.now });
    expect(buckets.take("a").allowed).toBe(true);
    expect(buckets.take("a").allowed).toBe(false);
    expect(buckets.take("b").allowed).toBe(true);
  });

  it("says how many whole seconds until the next token at slow rates", () => {
    const time = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 0.1, burst: 1, now: time.now });
    buckets.take("k");
    expect(buckets.take("k")).toEqual({ allowed: false, retryAfterSeconds: 10 });
    time.advance(2500);
    expect(buckets.take("k")).toEqual({ allowed: false, retryAfterSeconds: 8 });
  });

  it("bounds its memory by dropping full buckets, then the oldest", () => {
    const time = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 2, maxKeys: 100, now: time.now });
    for (let i = 0; i < 100; i++) buckets.take(`k${i}`);
    time.advance(1000); // every bucket is full again: all may go
    buckets.take("new");
    expect(buckets.size).toBe(1);
    for (let i = 0; i < 150; i++) buckets.take(`busy${i}`);
    expect(buckets.size).toBeLessThanOrEqual(100);
  });

  it("refuses nonsensical settings", () => {
    expect(() => new TokenBuckets({ ratePerSecond: 0, burst: 1 })).toThrow(/ratePerSecond/);
    expect(() => new TokenBuckets({ ratePerSecond: 1, burst: 0 })).toThrow(/burst/);
  });
});

describe("request ids", () => {
  it("keeps an acceptable incoming id and replaces anything else with a UUID", () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    expect(requestIdOf({ headers: { "x-request-id": "abc-123_x.y:z" } })).toBe("abc-123_x.y:z");
    expect(requestIdOf({ headers: { "x-request-id": "a".repeat(128) } })).toBe("a".repeat(128));
    expect(requestIdOf({ headers: { "x-request-id": "a".repeat(129) } })).toMatch(uuid);
    expect(requestIdOf({ headers: { "x-request-id": "has space" } })).toMatch(uuid);
    expect(requestIdOf({ headers: { "x-request-id": 'quote"d' } })).toMatch(uuid);
    expect(requestIdOf({ headers: { "x-request-id": "" } })).toMatch(uuid);
    expect(requestIdOf({ headers: {} })).toMatch(uuid);
  });
});

describe("store error classification", () => {
  it("recognises real MySQL and Redis errors, and nothing else", async () => {
    const connection = await mysql.createConnection({ uri: (process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/vitrine").replace(/\/[^/]*$/, "/") });
    const sqlError = await connection.query("SELECT * FROM no_such_database.no_such_table").catch((e: unknown) => e);
    await connection.end();
    expect(storeOf(sqlError)).toBe("mysql");
    expect(storeOf(new Error("wrapped", { cause: sqlError }))).toBe("mysql");

    const redis = new Redis(inject("redisUrl")!, { lazyConnect: true });
    await redis.connect();
    const replyError = await redis.call("NO_SUCH_COMMAND").catch((e: unknown) => e);
    redis.disconnect();
    expect(storeOf(replyError)).toBe("redis");
    const closedError = await redis.ping().catch((e: unknown) => e);
    expect(storeOf(closedError)).toBe("redis");

    expect(storeOf(new Error("boom"))).toBeUndefined();
    expect(storeOf(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).toBeUndefined();
    expect(storeOf("not an error")).toBeUndefined();
  });
});

describe("readiness", () => {
  const ok = () => Promise.resolve();

  it("is ready when every probe answers and the models are loaded, and reports workers", async () => {
    const readiness = new Readiness({
      probes: { mysql: { probe: ok }, redis: { probe: ok } },
      modelsLoaded: () => true,
      workers: () => ({ configured: 2, ready: 1 }),
      log: silent,
    });
    const report = await readiness.check();
    expect(report.ready).toBe(true);
    expect(Object.keys(report.checks).sort()).toEqual(["models", "mysql", "redis", "shutdown"]);
    expect(report.checks.mysql).toMatchObject({ status: "ok" });
    expect(report.workers).toEqual({ configured: 2, ready: 1 });
  });

  it("names the failing check: an error code, a timeout, models loading, shutting down", async () => {
    let loaded = false;
    const readiness = new Readiness({
      probes: {
        mysql: { probe: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:3306"), { code: "ECONNREFUSED" })) },
        redis: { probe: () => new Promise(() => undefined) },
      },
      modelsLoaded: () => loaded,
      timeoutMs: 50,
      log: silent,
    });
    const report = await readiness.check();
    expect(report.ready).toBe(false);
    expect(report.checks).toMatchObject({
      mysql: { status: "failing", error: "ECONNREFUSED" },
      redis: { status: "failing", error: "no answer within 50 ms" },
      models: { status: "failing", error: "loading" },
      shutdown: { status: "ok" },
    });
    // The caller learns which check failed, not the server's addresses.
    expect(JSON.stringify(report)).not.toContain("10.0.0.1");

    loaded = true;
    readiness.markShuttingDown();
    expect((await readiness.check()).checks).toMatchObject({ models: { status: "ok" }, shutdown: { status: "failing" } });
  });

  it("shares one round of probes among concurrent checks", async () => {
    let probes = 0;
    const readiness = new Readiness({
      probes: { mysql: { probe: async () => void probes++ } },
      modelsLoaded: () => true,
      log: silent,
    });
    await Promise.all([readiness.check(), readiness.check(), readiness.check()]);
    expect(probes).toBe(1);
    await readiness.check();
    expect(probes).toBe(2);
  });
});
