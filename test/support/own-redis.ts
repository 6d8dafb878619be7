// A Redis of a test file's own, for tests that must FLUSHALL or stop it: a Redis 8 server in the
// "single" project, a Redis 8 Cluster of 3 masters in the "cluster" project (same topology as the
// rest of the run), on free ports.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { provisionRedis8, provisionRedis8Cluster } from "../../src/provisioning/index.js";
import { openRedis, type RedisClient } from "../../src/storage/redis/index.js";
import { cacheDir } from "./cache-dir.js";
import { freePort, freePorts } from "./free-port.js";

export interface OwnRedis {
  /** REDIS_URL or REDIS_CLUSTER_NODES for the service. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-own-redis-"));
  const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
  if (inject("redisClusterNodes")) {
    const cluster = await provisionRedis8Cluster({ cacheDir, ports: await freePorts(3), dataDir });
    return { env: { REDIS_CLUSTER_NODES: cluster.nodeList }, stop: async () => (await cluster.stop(), cleanUp()) };
  }
  const port = await freePort();
  const redis = await provisionRedis8({ cacheDir, port, dataDir });
  // Callers FLUSHALL it: it must be one this test started.
  if (!redis.startedByUs) throw new Error(`a Redis this test did not start already listens on ${port}; refusing to use it`);
  return { env: { REDIS_URL: redis.url }, stop: async () => (await redis.stop(), cleanUp()) };
}

/** A client of the Redis (or cluster) `own` runs, opened as the service opens one. */
export async function openOwnClient(own: OwnRedis): Promise<RedisClient> {
  const config = loadConfig(own.env);
  return openRedis({ url: config.redis.url, clusterNodes: config.redis.clusterNodes });
}
