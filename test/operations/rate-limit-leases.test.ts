// The shared rate limit's buckets in Redis (src/storage/redis/rate-limit-buckets.ts), as two API
// processes use them, on the run's real Redis: at high rates each round trip takes a few tokens
// ahead, so a key's calls cost Redis a fraction of a call each, and still no more calls pass than
// the bucket holds and refills; at low rates every call asks Redis, as before.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { forEachPrimary, openRedis, RedisRateLimitBuckets, type RedisClient } from "../../src/storage/redis/index.js";
import { LEASE_MS, LEASES_KEPT, leaseSize } from "../../src/storage/redis/rate-limit-buckets.js";
import { monitorCommands } from "../support/redis-monitor.js";
import { redisEnv } from "../support/test-server.js";

const prefix = `vitrine-leases-${randomBytes(4).toString("hex")}:`;
let redis: RedisClient;
let other: RedisClient;

beforeAll(async () => {
  const config = loadConfig(redisEnv());
  const target = { url: config.redis.url, clusterNodes: config.redis.clusterNodes };
  [redis, other] = await Promise.all([openRedis(target), openRedis(target)]);
});

afterAll(async () => {
  await Promise.all([redis, other].map((c) => c?.quit()));
});

/** The take scripts every primary ran while `work` ran. */
async function takesDuring(work: () => Promise<void>): Promise<number> {
  let takes = 0;
  const monitors = await forEachPrimary(redis, (node) =>
    monitorCommands(node.options, (args) => {
      if (args[0]?.toUpperCase().startsWith("EVAL") && args.some((a) => a.startsWith(`${prefix}ratelimit:`))) takes++;
    }),
  );
  try {
    await work();
    // MONITOR's lines may trail the replies.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    await Promise.all(monitors.map((m) => m.stop()));
  }
  return takes;
}

describe("leaseSize", () => {
  it("takes no tokens ahead below 100 calls a second, a fiftieth of a second's worth from there, at most an eighth of the burst and 64", () => {
    expect(leaseSize({ ratePerSecond: 1, burst: 3 })).toBe(1);
    expect(leaseSize({ ratePerSecond: 99, burst: 198 })).toBe(1);
    expect(leaseSize({ ratePerSecond: 100, burst: 200 })).toBe(2);
    expect(leaseSize({ ratePerSecond: 1000, burst: 2000 })).toBe(20);
    expect(leaseSize({ ratePerSecond: 1000, burst: 40 })).toBe(5);
    expect(leaseSize({ ratePerSecond: 1_000_000, burst: 2_000_000 })).toBe(64);
  });
});

describe("shared buckets with leases", () => {
  it("asks Redis once for a lease's worth of calls at the default rate", async () => {
    const buckets = new RedisRateLimitBuckets(redis, prefix);
    const limit = { ratePerSecond: 1000, burst: 2000 };
    const takes = await takesDuring(async () => {
      for (let k = 0; k < 200; k++) expect((await buckets.take("busy", limit)).allowed).toBe(true);
    });
    expect(takes).toBe(200 / leaseSize(limit));
  });

  it("lets no more calls through two processes than the bucket holds and refills, and refuses the rest", async () => {
    const [a, b] = [new RedisRateLimitBuckets(redis, prefix), new RedisRateLimitBuckets(other, prefix)];
    const limit = { ratePerSecond: 1000, burst: 400 };
    const started = Date.now();
    let allowed = 0;
    let refused = 0;
    for (let k = 0; k < 1200; k++) {
      const taken = await (k % 3 === 0 ? b : a).take("shared", limit);
      if (taken.allowed) allowed++;
      else {
        refused++;
        expect(taken.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      }
    }
    const elapsed = Date.now() - started;
    expect(refused).toBeGreaterThan(0);
    // Every call let through took a token from the shared bucket first: the burst and what came
    // back meanwhile, at most (one ms of refill of slack for the clocks' rounding).
    expect(allowed).toBeLessThanOrEqual(limit.burst + Math.ceil((elapsed + 1) * (limit.ratePerSecond / 1000)));
    // And nearly all of them: only a lease's worth per process can be left unspent.
    expect(allowed).toBeGreaterThanOrEqual(limit.burst - 2 * leaseSize(limit));
  });

  it("asks Redis at every call below 100 calls a second, and drops tokens taken ahead once LEASE_MS passed", async () => {
    const slow = new RedisRateLimitBuckets(redis, prefix);
    const low = { ratePerSecond: 10, burst: 20 };
    expect(await takesDuring(async () => void (await Promise.all(Array.from({ length: 5 }, () => slow.take("slow", low)))))).toBe(5);
    let clock = 0;
    const leased = new RedisRateLimitBuckets(redis, prefix, () => clock);
    const limit = { ratePerSecond: 1000, burst: 2000 };
    expect(await takesDuring(async () => void (await leased.take("later", limit)))).toBe(1);
    expect(await takesDuring(async () => void (await leased.take("later", limit)))).toBe(0);
    clock += LEASE_MS;
    expect(await takesDuring(async () => void (await leased.take("later", limit)))).toBe(1);
    // Another limit for the key (its own, given at creation): what was taken under the old one is not spent.
    expect(await takesDuring(async () => void (await leased.take("later", { ratePerSecond: 500, burst: 1000 })))).toBe(1);
  });

  it("remembers the leases of at most LEASES_KEPT keys: past them, the ones it kept are forgotten", { timeout: 60_000 }, async () => {
    const clock = () => 0;
    const buckets = new RedisRateLimitBuckets(redis, prefix, clock);
    const limit = { ratePerSecond: 1000, burst: 2000 };
    for (let k = 0; k < LEASES_KEPT; k++) await buckets.take(`many-${k}`, limit);
    expect(await takesDuring(async () => void (await buckets.take("many-0", limit)))).toBe(0);
    // One more key, none of the leases expired: all are dropped, and the first key asks Redis again.
    await buckets.take("one-too-many", limit);
    expect(await takesDuring(async () => void (await buckets.take("many-0", limit)))).toBe(1);
  });
});
