// The service's own doors for bench/grpc-servers.ts: both listeners as the API process opens them
// (src/apps/api/listeners.ts: every interceptor, key-first refusals, request ids, one log line per
// call, metrics), with the real ApiKeys over MySQL (a database of the bench's own, dropped on exit)
// and a search that answers `hits` at once, so what is measured is what the doors cost a search,
// not the search.
import pino from "pino";
import { ApiKeys } from "../src/auth/index.js";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/index.js";
import { Readiness, ServiceMetrics } from "../src/operations/index.js";
import type { RpcCore } from "../src/rpc/index.js";
import type { SearchHit } from "../src/search/index.js";
import { storeOf } from "../src/storage/index.js";
import { openListeners } from "../src/apps/api/listeners.js";
import { MysqlApiKeyRepository, openMysql } from "../src/storage/mysql/index.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "../test/support/scratch-mysql.js";

export const ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000";

/**
 * Opens both listeners on free ports; returns their ports, an organization key with the search
 * scope, and how to drop the bench's database.
 */
export async function serveServiceDoors(hits: SearchHit[]): Promise<{ restPort: number; grpcPort: number; key: string; close(): Promise<void> }> {
  // The service's defaults, but rate limits kept in this process (no Redis here) and a high
  // enough limit that the bench is never refused.
  const config = loadConfig({ RATE_LIMIT_STORE: "memory", RATE_LIMIT_PER_SECOND: "1000000", RATE_LIMIT_BURST: "1000000", PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1" });
  // Every call's log line is written, as in production, but to /dev/null.
  const logger = createLogger({ level: config.logLevel }, pino.destination({ dest: "/dev/null", sync: true }));
  const databaseUrl = scratchDatabaseUrl();
  const mysql = await openMysql(databaseUrl);
  const apiKeys = new ApiKeys(new MysqlApiKeyRepository(mysql.db), "bench-admin-key-never-sent", config.apiKeyCacheMs);
  const { key } = await apiKeys.create(ORGANIZATION_ID, { name: "bench", scopes: ["search"], expiresAt: undefined });
  const search = { search: async () => hits };
  const core = { apiKeys, search } as unknown as RpcCore;
  const metrics = new ServiceMetrics(storeOf);
  const readiness = new Readiness({ probes: {}, modelsLoaded: () => true, log: logger, metrics });
  const { rest, grpc } = await openListeners(config, { core, metrics, readiness, redis: undefined as never }, logger);
  const restUrl = await rest.listen({ port: 0, host: "127.0.0.1" });
  const grpcUrl = await grpc.listen(0, "127.0.0.1");
  const close = async () => {
    await mysql.close();
    await dropScratchDatabase(databaseUrl);
  };
  return { restPort: Number(new URL(restUrl).port), grpcPort: Number(new URL(grpcUrl).port), key, close };
}
