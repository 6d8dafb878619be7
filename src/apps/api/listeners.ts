import { createContextValues } from "@connectrpc/connect";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { Config } from "../../config/index.js";
import {
  API_KEY_HEADER,
  keyCheck,
  reflectionServices,
  REQUEST_ID_HEADER,
  rpcRouterOptions,
  rpcRoutes,
  ServerReflection,
  ServerReflectionV1Alpha,
  SERVICES,
  withCheckedKey,
} from "../../rpc/index.js";
import type { ErrorPolicy, RpcCore } from "../../rpc/index.js";
import {
  doorOf,
  grpcContextValues,
  Health,
  healthService,
  installRequestIdHeader,
  listenerContextValues,
  rateLimitInterceptor,
  registerOperationsRoutes,
  requestIdOf,
} from "../../operations/index.js";
import type { Readiness, ServiceMetrics } from "../../operations/index.js";
import { unavailableStore } from "../../storage/index.js";
import { RedisRateLimitBuckets } from "../../storage/redis/index.js";
import type { RedisClient } from "../../storage/redis/index.js";
import { createHttpServers } from "./http-servers.js";
import { checkedKeyOf, refuseBadKeysFirst } from "./rpc-key-first.js";
import type { RpcKeyFirstOptions } from "./rpc-key-first.js";
import type { GrpcListener } from "./grpc-listener.js";

/**
 * The REST port (REST gateway, Connect, gRPC-Web, operations routes) and the gRPC port, with the
 * RPCs behind the same interceptors on both: metrics outermost, then errors and auth, then the
 * rate limit. A bad key is refused before the message is read, on every door.
 */
export async function openListeners(
  config: Config,
  parts: { core: RpcCore; metrics: ServiceMetrics; readiness: Readiness; redis: RedisClient },
  logger: FastifyBaseLogger,
): Promise<{ rest: FastifyInstance; grpc: GrpcListener }> {
  const { core, metrics, readiness } = parts;
  const rateLimit = rateLimitInterceptor(
    config.rateLimit,
    (door) => metrics.rateLimitedCall(door),
    config.rateLimit.store === "redis" ? new RedisRateLimitBuckets(parts.redis, config.redis.keyPrefix) : undefined,
    () => metrics.storeErrorOf("redis", "rpc"),
  );
  const health = healthService(readiness, SERVICES.map((service) => service.typeName));
  const routes = rpcRoutes(core);
  const reflection = reflectionServices([...SERVICES, Health]);
  const errors = rpcErrorPolicy(metrics);
  const checkKey = keyCheck(core.apiKeys, logger, errors);
  const keyFirst: RpcKeyFirstOptions = {
    services: SERVICES,
    checkKey,
    onRefused: (call) => metrics.rpcRefused(doorOf(call.contentType), call.service, call.method, call.code, call.seconds),
  };
  return createHttpServers({
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
    restBeforeBody: async (headers) => withCheckedKey(createContextValues(), await checkKey(headers.get(API_KEY_HEADER))),
    services: SERVICES,
    logger,
    maxRequestBytes: config.limits.maxRequestBytes,
    shutdownGraceMs: config.shutdownGraceMs,
    genReqId: requestIdOf,
    contextValues: (request) => withCheckedKey(listenerContextValues(request), checkedKeyOf(request)),
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
}

const STORE_NAMES = { mysql: "MySQL", redis: "Redis" } as const;

/** Store outages become UNAVAILABLE naming the store, and every store error is counted. */
function rpcErrorPolicy(metrics: ServiceMetrics): ErrorPolicy {
  return {
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
}
