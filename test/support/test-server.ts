import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { adminKeyPath, loadConfig } from "../../src/config/index.js";
import type { Config } from "../../src/config/index.js";
import { createApiApp } from "../../src/apps/api/api-app.js";
import type { ApiApp } from "../../src/apps/api/api-app.js";
import { cacheDir } from "./cache-dir.js";
import { deleteKeys, keysMatching } from "./redis-keys.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "./scratch-mysql.js";

export interface TestServer {
  app: ApiApp;
  config: Config;
  restUrl: string;
  grpcUrl: string;
  adminKey: string;
  /** The service's log lines, parsed, when started with `captureLogs` (LOG_LEVEL still applies; the default is silent). */
  logs: Record<string, unknown>[];
  /** Creates an organization key through the REST API, as an operator would. */
  createKey(organizationId: string, scopes?: string[]): Promise<string>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Collect the log lines in `logs` instead of writing them to standard output. */
  captureLogs?: boolean;
  /** Leave ADMIN_API_KEY unset, so the service generates one into DATA_DIR/admin-api-key as `npm start` does. */
  generatedAdminKey?: boolean;
}

/**
 * Starts the real service in this process on ephemeral ports, against the real MariaDB, in a
 * database of its own that is dropped on close.
 */
export async function startTestServer(env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const databaseUrl = scratchDatabaseUrl();
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-test-"));
  let adminKey = `test-admin-${randomUUID()}`;
  const keyPrefix = `vitrine-test-${randomBytes(6).toString("hex")}:`;
  const config = loadConfig({
    PORT: "0",
    GRPC_PORT: "0",
    HOST: "127.0.0.1",
    MYSQL_URL: databaseUrl,
    ...redisEnv(),
    REDIS_KEY_PREFIX: keyPrefix,
    ...(options.generatedAdminKey ? {} : { ADMIN_API_KEY: adminKey }),
    DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    SHUTDOWN_GRACE_MS: "500",
    // API tests see products stay PROCESSING; processing tests ask for workers.
    WORKERS: "0",
    // Test files run in parallel and are CPU-bound: workers niced below them would starve.
    WORKER_NICENESS: "0",
    // Suites fire calls as fast as they can; the rate-limit tests set their own limits.
    RATE_LIMIT_PER_SECOND: "0",
    ...env,
  });
  const logs: Record<string, unknown>[] = [];
  const logDestination = options.captureLogs ? { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } : undefined;
  const app = await createApiApp(config, logDestination ? { logDestination } : {});
  if (options.generatedAdminKey) adminKey = readFileSync(adminKeyPath(dataDir), "utf8").trim();
  const { restUrl, grpcUrl } = await app.listen();

  return {
    app,
    config,
    restUrl,
    grpcUrl,
    adminKey,
    logs,
    async createKey(organizationId, scopes = ["read", "write", "search"]) {
      const response = await fetch(`${restUrl}/organizations/${organizationId}/keys`, {
        method: "POST",
        headers: { "content-type": "application/json", SERVICE_API_KEY: adminKey },
        body: JSON.stringify({ name: "test", scopes }),
      });
      if (response.status !== 201) throw new Error(`key creation failed: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { key: string }).key;
    },
    async close() {
      await deleteKeys(app.redis, await keysMatching(app.redis, `${keyPrefix}*`));
      await app.close();
      await dropScratchDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A server with one worker process that fetches images from the loopback image server (support/image-server.ts). */
export async function startTestServerWithWorker(env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const server = await startTestServer(
    { WORKERS: "1", CACHE_DIR: cacheDir, IMAGE_FETCH_ALLOW_PRIVATE: "true", PROCESSING_IDLE_POLL_MS: "100", ...env },
    options,
  );
  await server.app.workers.ready;
  return server;
}

/**
 * The run's Redis, as the service reads it: the "single" project's server (REDIS_URL) or the
 * "cluster" project's Redis Cluster (REDIS_CLUSTER_NODES).
 */
export function redisEnv(): Record<string, string> {
  const cluster = inject("redisClusterNodes");
  if (cluster) return { REDIS_CLUSTER_NODES: cluster };
  const url = inject("redisUrl");
  if (!url) throw new Error("no Redis provided to this test run");
  return { REDIS_URL: url };
}
