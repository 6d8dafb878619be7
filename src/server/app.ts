import { createLogger } from "../logging/index.js";
import type { DestinationStream } from "pino";
import type { FastifyInstance } from "fastify";
import { ApiKeyService } from "../auth/index.js";
import { CatalogService, ProductService } from "../catalogs/index.js";
import type { Config } from "../config/index.js";
import { API_KEY_HEADER, keyCheck, reflectionServices, rpcRouterOptions, rpcRoutes, ServerReflection, ServerReflectionV1Alpha, SERVICES } from "../rpc/index.js";
import type { ErrorPolicy } from "../rpc/index.js";
import {
  countProductsByStatus,
  doorOf,
  grpcContextValues,
  Health,
  healthService,
  installRequestIdHeader,
  listenerContextValues,
  rateLimitInterceptor,
  Readiness,
  registerOperationsRoutes,
  REQUEST_ID_HEADER,
  requestIdOf,
  ServiceMetrics,
  unavailableStore,
} from "../operations/index.js";
import type { RpcCore } from "../rpc/index.js";
import {
  MysqlApiKeyRepository,
  MysqlCatalogRepository,
  MysqlProductRepository,
  MysqlSearchLog,
  MysqlSearchSource,
} from "../storage/mysql/index.js";
import { openTextEncoder } from "../embeddings/index.js";
import { SearchService } from "../search/index.js";
import type { CatalogEvents } from "../catalogs/index.js";
import { RedisRateLimitBuckets } from "../storage/redis/index.js";
import type { RedisClient } from "../storage/redis/index.js";
import { openMysqlAtStart, openRedisAtStart } from "./stores.js";
import { createSearchIndex, startIndexSweeper } from "./search-index.js";
import type { SearchIndex } from "./search-index.js";
import type { MysqlConnection } from "../storage/mysql/index.js";
import { join } from "node:path";
import { LocalObjectStore } from "../storage/objects/index.js";
import { resolveAdminKey } from "./admin-key.js";
import { resolveObjectUrlSecret } from "./object-url-secret.js";
import { createHttpServers } from "./http-servers.js";
import { registerObjectsRoute } from "./objects-route.js";
import { refuseBadKeysFirst } from "./rpc-key-first.js";
import type { RpcKeyFirstOptions } from "./rpc-key-first.js";
import { registerUiRoute } from "./ui-route.js";
import { startWorkerProcesses } from "./worker-processes.js";
import type { WorkerProcesses } from "./worker-processes.js";
import type { GrpcListener } from "./grpc-listener.js";

export interface App {
  core: RpcCore;
  mysql: MysqlConnection;
  redis: RedisClient;
  searchIndex: SearchIndex;
  processing: WorkerProcesses;
  metrics: ServiceMetrics;
  readiness: Readiness;
  rest: FastifyInstance;
  grpc: GrpcListener;
  /** Starts both listeners; returns their bound addresses (ports may be 0 in tests). */
  listen(): Promise<{ restUrl: string; grpcUrl: string }>;
  close(): Promise<void>;
}

export interface AppOptions {
  /** Where the log lines go; default standard output. */
  logDestination?: DestinationStream;
}

/** The composition root: the one place that knows every concrete implementation. */
export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = createLogger(
    {
      level: config.logLevel,
      redact: { paths: ["req.headers.service_api_key", "req.headers.authorization"], censor: "[redacted]" },
    },
    options.logDestination,
  );
  const metrics = new ServiceMetrics();
  const adminKey = resolveAdminKey(config.adminApiKey, config.dataDir, logger);
  const mysql = await openMysqlAtStart(config.mysqlUrl, config.startupWaitMs, logger);
  const redis = await openRedisAtStart(config.redis, config.startupWaitMs, logger);
  metrics.watchRedis(redis, logger);
  // Search queries are encoded here; the image model stays in the workers.
  const text = await openTextEncoder({ cacheDir: config.cacheDir, log: (msg) => logger.info({}, msg) });

  let listeningUrl = `http://localhost:${config.port}`;
  // Resolved before the worker processes start, so they read the secret rather than race to make one.
  const objectUrlSecret = resolveObjectUrlSecret(config.dataDir, logger);
  const objects = new LocalObjectStore(join(config.dataDir, "objects"), () => config.publicUrl ?? listeningUrl, objectUrlSecret);
  const processing = startWorkerProcesses(config, logger, {
    batch: (batch) => metrics.processingBatch(batch),
    mapFit: (fit) => metrics.mapFit(fit),
  });

  const searchIndex = createSearchIndex(config, mysql, redis, text, logger);
  const searchLog = new MysqlSearchLog(mysql.db, logger);
  const search = new SearchService(new MysqlSearchSource(mysql.db), searchIndex.index, searchIndex.sync, searchIndex.spaces, text, searchLog, {
    boosts: { boost: config.search.boost, superBoost: config.search.superBoost },
    exactUpTo: config.search.exactUpTo,
    lexical: config.search.lexical,
  });
  const events: CatalogEvents = {
    productsQueued: () => processing.notify(),
    async searchableChanged(catalogId) {
      // The change is committed and queued for the index; if it cannot be applied now, the
      // sweeper applies it.
      await searchIndex.sync.sync(catalogId).catch((error: unknown) => {
        logger.warn({ err: error, catalogId }, "vector index not updated now; the sweeper will retry");
      });
    },
  };
  const sweeper = startIndexSweeper(searchIndex.sync, config.search.indexSweepMs, logger);

  const productRepository = new MysqlProductRepository(mysql.db);
  const catalogs = new CatalogService(new MysqlCatalogRepository(mysql.db), productRepository, events);
  const products = new ProductService(catalogs, productRepository, config.limits, events);
  const apiKeys = new ApiKeyService(new MysqlApiKeyRepository(mysql.db), adminKey, config.apiKeyCacheMs);
  const core: RpcCore = { catalogs, products, apiKeys, objects, search };

  // Operations: readiness, metrics, request ids, rate limiting (see README "Operating it").
  const readiness = new Readiness({
    probes: {
      mysql: { store: "mysql", probe: () => mysql.pool.query("SELECT 1") },
      redis: { store: "redis", probe: () => redis.ping() },
    },
    // The API process's only model, the text encoder, is loaded above, before the listeners open.
    modelsLoaded: () => true,
    workers: () => processing.status(),
    log: logger,
    metrics,
  });
  metrics.productsByStatus(() => countProductsByStatus(mysql.db), logger);
  const rateLimit = rateLimitInterceptor(
    config.rateLimit,
    (door) => metrics.rateLimitedCall(door),
    config.rateLimit.store === "redis" ? new RedisRateLimitBuckets(redis, config.redis.keyPrefix) : undefined,
    () => metrics.storeErrorOf("redis", "rpc"),
  );
  const health = healthService(readiness, SERVICES.map((service) => service.typeName));
  const routes = rpcRoutes(core);
  const reflection = reflectionServices([...SERVICES, Health]);
  const STORE_NAMES = { mysql: "MySQL", redis: "Redis" } as const;
  const errors: ErrorPolicy = {
    onInternal: (error) => metrics.storeError(error, "rpc"),
    unavailableStore: (error) => {
      const store = unavailableStore(error);
      return store && STORE_NAMES[store];
    },
    onUnavailable: (_name, error) => {
      const store = unavailableStore(error);
      if (store) metrics.storeErrorOf(store, "rpc");
    },
  };
  const checkKey = keyCheck(apiKeys, logger, errors);
  const keyFirst: RpcKeyFirstOptions = {
    services: SERVICES,
    checkKey,
    onRefused: (call) => metrics.rpcRefused(doorOf(call.contentType), call.service, call.method, call.code, call.seconds),
  };

  const { rest, grpc } = await createHttpServers({
    routes: (router) => {
      routes(router);
      router.service(Health, health);
      router.service(ServerReflection, reflection.v1);
      router.service(ServerReflectionV1Alpha, reflection.v1alpha);
    },
    routerOptions: rpcRouterOptions(core, logger, config.limits.maxRequestBytes, {
      outer: [metrics.rpcInterceptor()],
      afterAuth: [rateLimit],
      errors,
    }),
    restBeforeBody: (headers) => checkKey(headers.get(API_KEY_HEADER)),
    services: SERVICES,
    logger,
    maxRequestBytes: config.limits.maxRequestBytes,
    shutdownGraceMs: config.shutdownGraceMs,
    genReqId: requestIdOf,
    contextValues: listenerContextValues,
    setupRest(server) {
      installRequestIdHeader(server);
      refuseBadKeysFirst(server, keyFirst);
      metrics.instrumentHttp(server);
      registerOperationsRoutes(server, readiness, metrics);
    },
    grpc: {
      keyFirst,
      onRefused: (call) => metrics.rpcRefused("grpc", call.service, call.method, call.code, call.seconds),
      requestId: (metadata) => {
        const incoming = metadata.get(REQUEST_ID_HEADER)[0];
        return requestIdOf({ headers: typeof incoming === "string" ? { [REQUEST_ID_HEADER]: incoming } : {} });
      },
      contextValues: grpcContextValues,
    },
  });
  registerObjectsRoute(rest, objects);
  registerUiRoute(rest);

  return {
    core,
    mysql,
    redis,
    searchIndex,
    processing,
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
      await processing.stop();
      await sweeper.stop();
      await searchLog.close();
      // With no offline queue, QUIT fails at once while Redis is away: then just drop the socket.
      await redis.quit().catch(() => redis.disconnect());
      await text.close();
      await mysql.close();
    },
  };
}
