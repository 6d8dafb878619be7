// Vitest global setup: one Redis 8 for the whole run, as `npm test` promises. With REDIS_URL set,
// that server is used and nothing is started; otherwise one is provisioned on its own port (from
// PATH, or fetched from Debian's archive into the cache) and stopped at the end. Test servers each
// use their own key prefix on it.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { provisionRedis8 } from "../../src/provisioning/index.js";
import { cacheDir } from "./cache-dir.js";

/** A port nobody listens on now: each test run gets a Redis of its own, so parallel runs never stop each other's. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
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
