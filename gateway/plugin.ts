import type { DescService, JsonValue } from "@bufbuild/protobuf";
import type { ContextValues, Transport } from "@connectrpc/connect";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { installBodyParsers, UnsupportedBody } from "./body-parsers.js";
import { errorObject, GatewayError, toErrorResponse } from "./error-object.js";
import { readHttpBindings } from "./http-rules.js";
import type { HttpBinding, SuccessStatusOf } from "./http-rules.js";
import { buildOpenApiDocument } from "./openapi.js";
import type { OpenApiOptions } from "./openapi.js";
import { parsePathTemplate } from "./path-template.js";
import { createRequestDecoder } from "./request-message.js";
import { responseJson } from "./response-body.js";

export interface RestGatewayOptions {
  /** Every method with a google.api.http rule becomes a route. */
  services: readonly DescService[];
  /** Where the RPCs go; the service passes its in-process transport (rpc/in-process-transport.ts), which runs the same interceptors as its other doors. */
  transport: Transport;
  /** A method's HTTP status on success when not 200 (the service's own method option, say). */
  successStatus?: SuccessStatusOf;
  /** Request headers passed on as RPC headers (the service's key and request id, say). */
  forwardHeaders: readonly string[];
  /**
   * Runs on every gateway route before the body is read, with the headers the RPC would get;
   * what it throws is answered like an RPC error, and the context values it returns go to the RPC.
   * The server checks the API key here, so a bad key is refused whatever the body holds, and hands
   * the principal on so the RPC's own check need not repeat it.
   */
  beforeBody?: (headers: Headers) => Promise<ContextValues | void>;
  /** Body size limit of the gateway routes in bytes; default: the server's bodyLimit. */
  bodyLimit?: number;
  /**
   * Serves the OpenAPI 3.1 document of these routes, generated from the same bindings, at
   * `path` (default /openapi.json), without authentication. Absent: no document.
   */
  openapi?: OpenApiOptions & { path?: string };
}

const JSON_TYPE = "application/json; charset=utf-8";

// What beforeBody returned for a request, for its RPC.
const contextValuesOf = new WeakMap<FastifyRequest, ContextValues>();

/**
 * REST/JSON routes transcoded from the google.api.http annotations of `services`.
 *
 * Scoping: all the work happens in a child scope this plugin registers itself, so it is the same
 * whether the server registers it plainly or wrapped in fastify-plugin. In that scope:
 * - the JSON body parser (empty body allowed) and the error handler apply to the gateway routes
 *   only; the Connect routes and any other routes keep their own (connect-fastify installs its
 *   own no-op parsers in its scope, and would refuse to if we had replaced the root's JSON parser);
 * - the not-found handler, set from a child without a prefix, becomes the root 404 handler of the
 *   whole server (Fastify has one per prefix), so unknown URLs anywhere get the Error object and
 *   405 for known gateway paths. The server must therefore not call setNotFoundHandler itself,
 *   or startup fails with "Not found handler already set". With a `prefix` option, the 404
 *   handler covers only that prefix.
 */
export const restGateway: FastifyPluginAsync<RestGatewayOptions> = async (fastify, options) => {
  const bindings = readHttpBindings(options.services, options.successStatus);
  await fastify.register(async (scope) => {
    installBodyParsers(scope);
    scope.setErrorHandler(sendError);

    const forward = options.forwardHeaders.map((h) => h.toLowerCase());
    const { beforeBody } = options;
    const onRequest =
      beforeBody &&
      (async (request: FastifyRequest) => {
        const values = await beforeBody(forwardedHeaders(request, forward));
        if (values) contextValuesOf.set(request, values);
      });
    for (const binding of bindings) {
      scope.route({
        ...(onRequest ? { onRequest } : {}),
        method: binding.verb,
        url: binding.path.routePath,
        ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
        handler: createHandler(binding, options, forward),
      });
    }

    const routes = bindings.map((b) => ({ verb: b.verb, matcher: b.path.matcher }));
    if (options.openapi !== undefined) {
      const { path = "/openapi.json", ...documentOptions } = options.openapi;
      // Built once, at registration, so a binding the document cannot describe fails startup.
      const document = JSON.stringify(buildOpenApiDocument(bindings, documentOptions));
      scope.get(path, async (_request, reply) => reply.type(JSON_TYPE).send(document));
      routes.push({ verb: "GET", matcher: parsePathTemplate(path).matcher });
    }

    const notFound = createNotFound(routes, scope.prefix);
    // Without this hook Fastify would parse the body of an unknown route before calling the
    // not-found handler, answering 400/413/415 where 404 is the truth.
    scope.addHook("onRequest", async (request, reply) => {
      if (request.is404) return notFound(request, reply);
      return undefined;
    });
    scope.setNotFoundHandler(notFound);
  });
};

function createHandler(binding: HttpBinding, options: RestGatewayOptions, forward: readonly string[]) {
  const decode = createRequestDecoder(binding);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    let body = request.body as JsonValue | UnsupportedBody | undefined;
    if (body instanceof UnsupportedBody) {
      if (binding.body !== undefined) {
        throw new GatewayError(
          415,
          body.contentType === undefined
            ? "the request body needs the content type application/json"
            : `content type "${body.contentType}" is not supported; send application/json`,
        );
      }
      body = undefined;
    }
    const input = decode({
      params: request.params as Record<string, string | undefined>,
      query: new URLSearchParams(splitUrl(request.url).query),
      // Routes without a body ignore one sent anyway, like any other transcoding gateway.
      body: binding.body === undefined ? undefined : body,
    });

    // A caller that hangs up should not keep the RPC running on its behalf.
    const abort = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableEnded) abort.abort();
    };
    reply.raw.once("close", onClose);
    let response;
    try {
      response = await options.transport.unary(
        binding.method,
        abort.signal,
        undefined,
        forwardedHeaders(request, forward),
        input,
        contextValuesOf.get(request),
      );
    } finally {
      reply.raw.off("close", onClose);
    }

    reply.code(binding.successStatus);
    if (binding.successStatus === 204) return reply.send();
    return reply.type(JSON_TYPE).send(JSON.stringify(responseJson(binding, response.message)));
  };
}

function forwardedHeaders(request: FastifyRequest, names: readonly string[]): Headers {
  const headers = new Headers();
  for (const name of names) {
    const value = request.headers[name];
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const response = toErrorResponse(error, request.routeOptions.bodyLimit);
  if (response.internal) request.log.error({ err: error }, "REST gateway request failed");
  return reply
    .code(response.status)
    .headers(response.headers)
    .type(JSON_TYPE)
    .send(JSON.stringify(errorObject(request, response.status, response.message)));
}

function createNotFound(routes: readonly { verb: string; matcher: RegExp }[], prefix: string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const { path } = splitUrl(request.url);
    const relative = prefix !== "" && path.startsWith(prefix) ? path.slice(prefix.length) || "/" : path;
    const allowed = new Set<string>();
    for (const route of routes) {
      if (!route.matcher.test(relative)) continue;
      allowed.add(route.verb);
      if (route.verb === "GET") allowed.add("HEAD");
    }
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(", ");
      reply.header("allow", allow);
      return sendError(new GatewayError(405, `method ${request.method} is not allowed on ${path}; allowed: ${allow}`), request, reply);
    }
    return sendError(new GatewayError(404, `no route for ${request.method} ${path}`), request, reply);
  };
}

// Parsed here rather than taken from request.query so the server's querystringParser choice
// cannot change how repeated and unknown parameters are seen.
function splitUrl(url: string): { path: string; query: string } {
  const at = url.indexOf("?");
  return at === -1 ? { path: url, query: "" } : { path: url.slice(0, at), query: url.slice(at + 1) };
}
