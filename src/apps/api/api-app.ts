import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { DestinationStream } from "pino";
import { createLogger } from "../../logging/index.js";
import type { Logger } from "../../logging/index.js";
import { ApiKeys } from "../../auth/index.js";
import { Catalogs, Products } from "../../catalogs/index.js";
import type { Config } from "../../config/index.js";
import { API_KEY_HEADER } from "../../rpc/index.js";
import { Readiness, ServiceMetrics } from "../../operations/index.js";
import type { RpcCore } from "../../rpc/index.js";
import { storeOf } from "../../storage/index.js";
import {
  countProductsByStatus,
  MysqlApiKeyRepository,
  MysqlCatalogRepository,
  MysqlProductRepository,
  MysqlSearchLog,
  MysqlSearchSource,
} from "../../storage/mysql/index.js";
import { openSentenceEncoder } from "../../embeddings/index.js";
import type { SentenceEncoder } from "../../embeddings/index.js";
import { Searcher, startIndexSweeper } from "../../search/index.js";
import type { CatalogEvents } from "../../catalogs/index.js";
import { openRedis } from "../../storage/redis/index.js";
import type { RedisClient } from "../../storage/redis/index.js";
import { openMysqlAtStart, openRedisAtStart } from "../shared/stores.js";
import { createSearchIndex } from "../shared/search-index.js";
import type { SearchIndex } from "../shared/search-index.js";
import type { MysqlConnection } from "../../storage/mysql/index.js";
import { LocalObjectStore } from "../../storage/objects/index.js";
import { resolveAdminKey } from "./admin-key.js";
import { resolveObjectUrlSecret } from "../shared/object-url-secret.js";
import { registerObjectsRoute } from "./objects-route.js";
import { registerUiRoute } from "./ui-route.js";
import { startWorkerProcesses } from "./worker-supervisor.js";
import type { WorkerSupervisor } from "./worker-supervisor.js";
import type { GrpcListener } from "./grpc-listener.js";
import { openListeners } from "./listeners.js";

export interface ApiApp {
  core: RpcCore;
  mysql: MysqlConnection;
  redis: RedisClient;
  searchIndex: SearchIndex;
  workers: WorkerSupervisor;
  metrics: ServiceMetrics;
  readiness: Readiness;
  rest: FastifyInstance;
  grpc: GrpcListener;
  /** Starts both listeners; returns their bound addresses (ports may be 0 in tests). */
  listen(): Promise<{ restUrl: string; grpcUrl: string }>;
  close(): Promise<void>;
}

export interface ApiAppOptions {
  /** Where the log lines go; default standard output. */
  logDestination?: DestinationStream;
}

/** The composition root of the API process: the one place that knows every concrete implementation. */
export async function createApiApp(config: Config, options: ApiAppOptions = {}): Promise<ApiApp> {
  const logger = createLogger(
    {
      level: config.logLevel,
      redact: { paths: [`req.headers.${API_KEY_HEADER}`, "req.headers.authorization"], censor: "[redacted]" },
    },
    options.logDestination,
  );
  const metrics = new ServiceMetrics(storeOf);
  const adminKey = resolveAdminKey(config.adminApiKey, config.dataDir, logger);
  const mysql = await openMysqlAtStart(config.mysqlUrl, config.startupWaitMs, logger);
  const redis = await openRedisAtStart(config.redis, config.startupWaitMs, logger);
  metrics.watchRedis(redis, logger);
  // Search queries are encoded here; the image model stays in the workers.
  const text = await openSentenceEncoder({ cacheDir: config.cacheDir, log: (msg) => logger.info({}, msg) });

  let listeningUrl = `http://localhost:${config.port}`;
  // Resolved before the worker processes start, so they read the secret rather than race to make one.
  const objectUrlSecret = resolveObjectUrlSecret(config.dataDir, logger);
  const objects = new LocalObjectStore(join(config.dataDir, "objects"), () => config.publicUrl ?? listeningUrl, objectUrlSecret);
  const workers = startWorkerProcesses(config, logger, {
    batch: (report) => metrics.processingBatch(report),
    mapFit: (report) => metrics.mapFit(report),
  });

  // The main connection reports Redis's outages (watchRedis): these would only repeat them.
  const vsimConnections = await Promise.all(Array.from({ length: config.search.vsimConnections }, () => openRedis(config.redis)));
  for (const connection of vsimConnections) connection.on("error", () => undefined);
  const searchIndex = createSearchIndex(config, mysql, redis, text, logger, vsimConnections, (outcome) => metrics.filterLearning(outcome));
  const searchLog = new MysqlSearchLog(mysql.db, logger);
  const core = createCore(config, { mysql, searchIndex, searchLog, text, objects, workers, adminKey }, logger);
  const sweeper = startIndexSweeper(searchIndex.sync, { intervalMs: config.search.indexSweepMs, orphansEveryMs: config.search.indexOrphanSweepMs }, logger);

  // Operations: readiness, metrics, request ids, rate limiting (see README "Operating it").
  const readiness = new Readiness({
    probes: {
      mysql: { store: "mysql", probe: () => mysql.pool.query("SELECT 1") },
      redis: { store: "redis", probe: () => redis.ping() },
    },
    // The API process's only model, the text encoder, is loaded above, before the listeners open.
    modelsLoaded: () => true,
    workers: () => workers.status(),
    log: logger,
    metrics,
  });
  metrics.productsByStatus(() => countProductsByStatus(mysql.db), logger);
  const { rest, grpc } = await openListeners(config, { core, metrics, readiness, redis }, logger);
  registerObjectsRoute(rest, objects);
  registerUiRoute(rest);

  return {
    core,
    mysql,
    redis,
    searchIndex,
    workers,
    metrics,
    readiness,
    rest,
    grpc,
    async listen() {
      const restUrl = await rest.listen({ port: config.port, host: config.host });
      const grpcUrl = await grpc.listen(config.grpcPort, config.host);
      listeningUrl = restUrl;
      return { restUrl, grpcUrl };
    },
    async close() {
      // Report not ready and end health watches, stop taking requests, let the products being
      // processed finish, then release the pool.
      readiness.markShuttingDown();
      await Promise.allSettled([rest.close(), grpc.close()]);
      await workers.stop();
      await sweeper.stop();
      await searchLog.close();
      // Filters being learned read Redis until they are held; facets being written, MySQL.
      await Promise.all([searchIndex.index.settled(), searchIndex.facets.settled()]);
      // With no offline queue, QUIT fails at once while Redis is away: then just drop the socket.
      await Promise.all([redis, ...vsimConnections].map((connection) => connection.quit().catch(() => connection.disconnect())));
      await text.close();
      await mysql.close();
    },
  };
}

/** The core services over MySQL and the vector index: what the RPC adapters call. */
function createCore(
  config: Config,
  parts: {
    mysql: MysqlConnection;
    searchIndex: SearchIndex;
    searchLog: MysqlSearchLog;
    text: SentenceEncoder;
    objects: LocalObjectStore;
    workers: WorkerSupervisor;
    adminKey: string;
  },
  logger: Logger,
): RpcCore {
  const { mysql, searchIndex, text, workers } = parts;
  const search = new Searcher(new MysqlSearchSource(mysql.db), searchIndex.index, searchIndex.sync, searchIndex.spaces, text, parts.searchLog, {
    boosts: { boost: config.search.boost, superBoost: config.search.superBoost },
    exactUpTo: config.search.exactUpTo,
    lexical: config.search.lexical,
    lexicalMaxHolders: config.search.lexicalMaxHolders,
  });
  const events: CatalogEvents = {
    productsQueued: () => workers.notify(),
    async searchableChanged(catalogId) {
      // The change is committed and queued for the index; if it cannot be applied now, the
      // sweeper applies it.
      await searchIndex.sync.sync(catalogId).catch((error: unknown) => {
        logger.warn({ err: error, catalogId }, "vector index not updated now; the sweeper will retry");
      });
    },
  };
  const productRepository = new MysqlProductRepository(mysql.db);
  const catalogs = new Catalogs(new MysqlCatalogRepository(mysql.db), productRepository, events);
  const products = new Products(catalogs, productRepository, config.limits, events);
  const apiKeys = new ApiKeys(new MysqlApiKeyRepository(mysql.db), parts.adminKey, config.apiKeyCacheMs);
  return { catalogs, products, apiKeys, objects: parts.objects, search };
}
