// The service's own doors for bench/grpc-servers.ts: both listeners as the API process opens them
// (src/apps/api/listeners.ts: every interceptor, key-first refusals, request ids, one log line per
// call, metrics), with a real ApiKeys over keys held in memory and a search that answers `hits`
// at once, so what is measured is what the doors cost a search, not the search.
import pino from "pino";
import { ApiKeys } from "../src/auth/index.js";
import type { ApiKeyRecord, ApiKeyRepository } from "../src/auth/index.js";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/index.js";
import { Readiness, ServiceMetrics } from "../src/operations/index.js";
import type { RpcCore } from "../src/rpc/index.js";
import type { SearchHit } from "../src/search/index.js";
import { storeOf } from "../src/storage/index.js";
import { openListeners } from "../src/apps/api/listeners.js";

export const ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000";

class MemoryKeys implements ApiKeyRepository {
  private readonly records = new Map<string, ApiKeyRecord>();
  async insert(record: ApiKeyRecord): Promise<void> {
    this.records.set(record.id, record);
  }
  async findById(id: string): Promise<ApiKeyRecord | undefined> {
    return this.records.get(id);
  }
  async listByOrganization(organizationId: string): Promise<ApiKeyRecord[]> {
    return [...this.records.values()].filter((record) => record.organizationId === organizationId);
  }
  async revoke(): Promise<ApiKeyRecord | undefined> {
    return undefined;
  }
}

/** Opens both listeners on free ports; returns their ports and an organization key with the search scope. */
export async function serveServiceDoors(hits: SearchHit[]): Promise<{ restPort: number; grpcPort: number; key: string }> {
  // The service's defaults, but rate limits kept in this process (no Redis here) and a high
  // enough limit that the bench is never refused.
  const config = loadConfig({ RATE_LIMIT_STORE: "memory", RATE_LIMIT_PER_SECOND: "1000000", RATE_LIMIT_BURST: "1000000", PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1" });
  // Every call's log line is written, as in production, but to /dev/null.
  const logger = createLogger({ level: config.logLevel }, pino.destination({ dest: "/dev/null", sync: true }));
  const apiKeys = new ApiKeys(new MemoryKeys(), "bench-admin-key-never-sent", config.apiKeyCacheMs);
  const { key } = await apiKeys.create(ORGANIZATION_ID, { name: "bench", scopes: ["search"], expiresAt: undefined });
  const search = { search: async () => hits };
  const core = { apiKeys, search } as unknown as RpcCore;
  const metrics = new ServiceMetrics(storeOf);
  const readiness = new Readiness({ probes: {}, modelsLoaded: () => true, log: logger, metrics });
  const { rest, grpc } = await openListeners(config, { core, metrics, readiness, redis: undefined as never }, logger);
  const restUrl = await rest.listen({ port: 0, host: "127.0.0.1" });
  const grpcUrl = await grpc.listen(0, "127.0.0.1");
  return { restPort: Number(new URL(restUrl).port), grpcPort: Number(new URL(grpcUrl).port), key };
}
