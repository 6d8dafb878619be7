// Key-level access to the test's Redis, one server or a cluster alike: on a cluster a KEYS, a
// FLUSHALL or a multi-key DEL sees only one node (or one slot), so these go to every master.
import { forEachPrimary } from "../../src/storage/redis/index.js";
import type { RedisClient } from "../../src/storage/redis/index.js";

export async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  return (await forEachPrimary(redis, (node) => node.keys(pattern))).flat();
}

/** Deletes keys one by one: keys of different catalogs sit in different slots. */
export async function deleteKeys(redis: RedisClient, keys: readonly string[]): Promise<void> {
  await Promise.all(keys.map((key) => redis.del(key)));
}

/** Every key of every master: only for a Redis (or cluster) the test started itself. */
export async function flushAll(redis: RedisClient): Promise<void> {
  await forEachPrimary(redis, (node) => node.flushall());
}
