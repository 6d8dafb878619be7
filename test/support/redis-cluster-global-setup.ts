// Vitest global setup of the "cluster" project: the search suite runs again against a real Redis 8
// Cluster of 3 masters started on free ports (REDIS_CLUSTER_NODES), and stopped at the end.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { provisionRedis8Cluster } from "../../src/provisioning/index.js";
import { cacheDir } from "./cache-dir.js";
import { freePorts } from "./free-port.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-test-redis-cluster-"));
  const cluster = await provisionRedis8Cluster({ cacheDir, ports: await freePorts(3), dataDir, log: (line) => console.error(`[redis8-cluster] ${line}`) });
  project.provide("redisClusterNodes", cluster.nodeList);
  return async () => {
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
