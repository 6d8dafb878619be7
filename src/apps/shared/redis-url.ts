import { join } from "node:path";
import type { Config } from "../../config/index.js";
import type { Logger } from "../../logging/index.js";
import { provisionRedis8 } from "../../provisioning/index.js";

/** Where `npm start` and `npm run worker` run their own Redis 8 when REDIS_URL is unset. */
export const PROVISIONED_REDIS_PORT = 6380;

/**
 * REDIS_URL or REDIS_CLUSTER_NODES when set (nothing is started); otherwise a Redis 8 of the service's own, keeping its
 * data under DATA_DIR/redis: the one this DATA_DIR started is reused (it reports that directory
 * as its own), else one is started (from PATH, or fetched from Debian's archive into the cache)
 * on port 6380, or on a free port when something else holds 6380 (recorded in DATA_DIR/redis/port
 * so workers find it).
 */
export async function resolveRedisUrl(config: Config, log: Logger): Promise<{ url: string | undefined; stop(): Promise<void> }> {
  // A cluster, like a URL, is the operator's: nothing is started.
  if (config.redis.url || config.redis.clusterNodes) return { url: config.redis.url, stop: async () => undefined };
  const dataDir = join(config.dataDir, "redis");
  const redis = await provisionRedis8({ cacheDir: config.cacheDir, port: PROVISIONED_REDIS_PORT, dataDir, movable: true, log: (line) => log.info({}, line) });
  log.info(
    { redisUrl: redis.url, version: redis.version, dataDir: redis.startedByUs ? dataDir : undefined },
    redis.startedByUs
      ? `REDIS_URL is not set: started Redis ${redis.version} at ${redis.url}`
      : `REDIS_URL is not set: using this installation's Redis ${redis.version} already at ${redis.url}`,
  );
  return redis;
}
