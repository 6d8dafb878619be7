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

/**
 * The calls of a command so far on every master of a Redis (INFO commandstats; script calls count;
 * a module's commands, such as VSIM, are listed in capitals).
 */
export async function callsOf(redis: RedisClient, command: string): Promise<number> {
  const stats = await forEachPrimary(redis, (node) => node.info("commandstats"));
  return stats.reduce((sum, text) => sum + Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`, "i").exec(text)?.[1] ?? 0), 0);
}
