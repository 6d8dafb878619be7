import { createRouterTransport } from "@connectrpc/connect";
import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { DescService } from "@bufbuild/protobuf";
import type { Http2Server, Http2ServerRequest, Http2ServerResponse } from "node:http2";
import fastify from "fastify";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { restGateway } from "../../gateway/index.js";

export type GrpcFastify = FastifyInstance<Http2Server, Http2ServerRequest, Http2ServerResponse>;

export interface HttpServersOptions {
  routes: (router: ConnectRouter) => void;
  routerOptions: Partial<ConnectRouterOptions>;
  services: DescService[];
  logger: FastifyBaseLogger;
  maxRequestBytes: number;
}

/**
 * Two listeners, because Node's h2c server cannot also speak HTTP/1.1: one serves gRPC over
 * HTTP/2 for internal callers; the other serves the REST gateway, Connect and gRPC-Web.
 */
export async function createHttpServers(options: HttpServersOptions): Promise<{ rest: FastifyInstance; grpc: GrpcFastify }> {
  const { routes, routerOptions, logger, maxRequestBytes } = options;

  const grpc = fastify({ http2: true, loggerInstance: logger, bodyLimit: maxRequestBytes });
  await grpc.register(fastifyConnectPlugin, { ...routerOptions, routes, shutdownTimeoutMs: 10_000 });

  const rest = fastify({ loggerInstance: logger, bodyLimit: maxRequestBytes });
  await rest.register(fastifyConnectPlugin, { ...routerOptions, routes, shutdownTimeoutMs: 10_000 });
  // The gateway reaches the RPCs in-process, through the same router options (auth, errors,
  // limits) as a remote caller, so REST cannot behave differently from gRPC.
  const transport = createRouterTransport(routes, { router: routerOptions });
  await rest.register(restGateway, { services: options.services, transport });

  return { rest, grpc };
}
