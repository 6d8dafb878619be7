import type { ConnectRouter, ConnectRouterOptions, ContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { DescService } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fastify from "fastify";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { IncomingHttpHeaders } from "node:http";
import { errorObject, restGateway } from "../../../gateway/index.js";
import { API_KEY_HEADER, createInProcessTransport, httpSuccessStatusOf, REQUEST_ID_HEADER, requiredScopeOf } from "../../rpc/index.js";
import { answerClientError } from "./client-errors.js";
import { packageRoot } from "./package-root.js";
import { RequestLog } from "./request-log.js";
import { createGrpcListener } from "./grpc-listener.js";
import type { GrpcListener, GrpcListenerOptions } from "./grpc-listener.js";

export interface HttpServersOptions {
  routes: (router: ConnectRouter) => void;
  routerOptions: Partial<ConnectRouterOptions>;
  services: DescService[];
  logger: FastifyBaseLogger;
  maxRequestBytes: number;
  /** How long shutdown waits for in-flight calls before cutting connections. */
  shutdownGraceMs: number;
  /** Each request's id (Fastify's genReqId), on both listeners. Default: Fastify's counter. */
  genReqId?: (request: { headers: IncomingHttpHeaders }) => string;
  /** Context values of each call arriving on a listener (door, client address). */
  contextValues?: (request: FastifyRequest) => ContextValues;
  /** Checks a REST call's headers (the API key) before its body is read; see restGateway's beforeBody. */
  restBeforeBody?: (headers: Headers) => Promise<ContextValues | void>;
  /** Called on the REST listener before anything else is registered on it: hooks and routes of its own. */
  setupRest?: (rest: FastifyInstance) => void;
  /** What the gRPC listener needs beyond the routes and interceptors. */
  grpc: Pick<GrpcListenerOptions, "keyFirst" | "onRefused" | "requestId" | "contextValues">;
}

/**
 * Two listeners: one serves gRPC over HTTP/2 (h2c) for internal callers, with @grpc/grpc-js's
 * server (grpc-listener.ts: half the CPU per call of Connect on Node's HTTP/2 server); the other
 * serves the REST gateway, Connect and gRPC-Web with Fastify. Both run the same implementations
 * through the same interceptors.
 */
export async function createHttpServers(options: HttpServersOptions): Promise<{ rest: FastifyInstance; grpc: GrpcListener }> {
  const { routes, routerOptions, logger, maxRequestBytes } = options;
  const connectOptions = {
    ...routerOptions,
    routes,
    shutdownTimeoutMs: options.shutdownGraceMs,
    ...(options.contextValues ? { contextValues: options.contextValues } : {}),
  };
  const genReqId = options.genReqId ? { genReqId: options.genReqId } : {};

  const grpc = createGrpcListener({
    ...options.grpc,
    routes,
    interceptors: routerOptions.interceptors ?? [],
    logger,
    maxRequestBytes,
    shutdownGraceMs: options.shutdownGraceMs,
  });

  const rest = fastify({
    loggerInstance: logger,
    logController: new RequestLog(),
    bodyLimit: maxRequestBytes,
    ...genReqId,
    // Product ids go up to 128 characters; longer path segments are refused by validation with
    // a 400 that says why, rather than by the router.
    routerOptions: { maxParamLength: 1024 },
    // Errors the router raises before any route runs (malformed percent-encoding, overlong
    // segments) still owe the caller the documented Error object.
    frameworkErrors: (error, request, reply) => {
      const status = error.statusCode ?? 400;
      // Raised before any hook runs, so the request id header is set here.
      void (reply as FastifyReply).code(status).header(REQUEST_ID_HEADER, request.id).send(errorObject(request, status, error.message));
    },
    // And so do requests Node's HTTP parser refuses before Fastify sees them.
    clientErrorHandler: answerClientError,
  });
  options.setupRest?.(rest);
  await rest.register(fastifyConnectPlugin, connectOptions);
  // The gateway calls the RPC implementations in process, through the same interceptors (errors,
  // auth, rate limits, metrics) as a remote caller, so REST cannot behave differently from gRPC.
  const transport = createInProcessTransport(routes, routerOptions.interceptors ?? []);
  await rest.register(restGateway, {
    services: options.services,
    transport,
    forwardHeaders: [API_KEY_HEADER, REQUEST_ID_HEADER, "user-agent"],
    successStatus: httpSuccessStatusOf,
    openapi: openApiOptions(),
    ...(options.restBeforeBody ? { beforeBody: options.restBeforeBody } : {}),
  });

  return { rest, grpc };
}

/** What the REST listener's /openapi.json says about the service beyond the generated routes. */
const openApiOptions = () => ({
  requiredScope: requiredScopeOf,
  title: "Vitrine",
  version: packageVersion(),
  description:
    "Product search and recommendation service: catalogs, products, text-plus-visual search, similar products. " +
    "This document is generated from the protos (proto/vitrine/v1) and their google.api.http annotations.",
  apiKey: {
    header: API_KEY_HEADER.toUpperCase(),
    description:
      "Every operation needs an API key in this header. Organization keys act for one organization and carry " +
      "scopes (read, write, search); each operation lists the scope it needs. The admin key (ADMIN_API_KEY) may call " +
      "every operation in every organization, and is the only key for operations that need `admin` " +
      "(managing keys, reindexing). Missing, unknown, revoked or expired key: 401; other organization or missing scope: 403.",
  },
});

/** The service's version: its package.json's. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
}
