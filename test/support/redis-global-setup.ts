// Vitest global setup: one Redis 8 for the whole run, as `npm test` promises. With REDIS_URL set,
// that server is used and nothing is started; otherwise one is provisioned on its own port (from
// PATH, or fetched from Debian's archive into the cache) and stopped at the end. Test servers each
// use their own key prefix on it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { provisionRedis8 } from "../../src/provisioning/index.js";
import { cacheDir } from "./cache-dir.js";
import { freePort } from "./free-port.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The "single" project's Redis 8. */
    redisUrl?: string;
    /** The "cluster" project's Redis Cluster, as REDIS_CLUSTER_NODES takes it. */
    redisClusterNodes?: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.REDIS_URL) {
    project.provide("redisUrl", process.env.REDIS_URL);
    return async () => undefined;
  }
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-test-redis-"));
  const redis = await provisionRedis8({ cacheDir, port: await freePort(), dataDir, log: (line) => console.error(`[redis8] ${line}`) });
  project.provide("redisUrl", redis.url);
  return async () => {
    await redis.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
