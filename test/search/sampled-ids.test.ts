// A set's sample for filter shares (sampled-ids.ts) against the run's real Redis 8: drawn from the
// whole set, not from a run of it in the order its elements were added, as VRANDMEMBER answers
// for a large share of a small set.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { openRedis, type RedisClient } from "../../src/storage/redis/index.js";
import { sampledIds } from "../../src/storage/redis/sampled-ids.js";
import { redisEnv } from "../support/test-server.js";

let redis: RedisClient;
const keys: string[] = [];

async function vectorSet(elements: number): Promise<string> {
  const key = `sampled-ids-test:{${randomUUID()}}:vectors`;
  keys.push(key);
  for (let from = 0; from < elements; from += 500) {
    const pipeline = redis.pipeline();
    for (let i = from; i < Math.min(elements, from + 500); i++) pipeline.call("VADD", key, "VALUES", "3", String(Math.sin(i)), String(Math.cos(i)), "1", `e${i}`);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }
  return key;
}

beforeAll(async () => {
  const config = loadConfig(redisEnv());
  redis = await openRedis({ url: config.redis.url, clusterNodes: config.redis.clusterNodes });
});
afterAll(async () => {
  for (const key of keys) await redis.del(key);
  await redis.quit();
});

describe("sampledIds", () => {
  it("draws 1,000 of 2,400 elements from every quarter of the order they were added in", async () => {
    const key = await vectorSet(2400);
    // VRANDMEMBER itself answers a run of about 1,000 in a row: a quarter or two left out whole.
    const run = ((await redis.call("VRANDMEMBER", key, "1000")) as string[]).map((id) => Math.floor(Number(id.slice(1)) / 600));
    expect(new Set(run).size).toBeLessThan(4);
    for (let draw = 0; draw < 3; draw++) {
      const ids = await sampledIds(redis, key, 1000);
      expect(new Set(ids).size).toBe(1000);
      const quarters = [0, 0, 0, 0];
      for (const id of ids) quarters[Math.floor(Number(id.slice(1)) / 600)]!++;
      // 250 each, give or take 11 (one standard deviation).
      for (const n of quarters) expect(n, `quarters ${quarters}`).toBeGreaterThan(180);
    }
  });

  it("gives a set smaller than the sample whole, an empty one nothing, and a large one the sample's size", async () => {
    expect((await sampledIds(redis, await vectorSet(100), 1000)).sort()).toEqual(Array.from({ length: 100 }, (_, i) => `e${i}`).sort());
    expect(await sampledIds(redis, `sampled-ids-test:{${randomUUID()}}:none`, 1000)).toEqual([]);
    const large = await sampledIds(redis, await vectorSet(9000), 1000);
    expect(new Set(large).size).toBe(1000);
  });
});
