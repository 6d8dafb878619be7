import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerBase } from "fastify";
import { REQUEST_ID_HEADER } from "../rpc/headers.js";


// Up to 128 characters that need no quoting in a header, a log line or a URL.
const ACCEPTABLE = /^[A-Za-z0-9._~:/+=@-]{1,128}$/;

/**
 * Fastify's genReqId: the caller's x-request-id when it is acceptable (so a request can be traced
 * across services), a fresh UUID otherwise.
 */
export function requestIdOf(request: { headers: IncomingHttpHeaders }): string {
  const incoming = request.headers[REQUEST_ID_HEADER];
  return typeof incoming === "string" && ACCEPTABLE.test(incoming) ? incoming : randomUUID();
}

/**
 * Every response carries the request's id, and the call it makes carries it too: the header is
 * set to the id on the request itself, so the REST gateway forwards it and RPC-level log lines
 * (`reqId`) match the request's own.
 */
export function installRequestIdHeader<S extends RawServerBase>(
  server: FastifyInstance<S, RawRequestDefaultExpression<S>, RawReplyDefaultExpression<S>>,
): void {
  server.addHook("onRequest", async (request, reply) => {
    request.raw.headers[REQUEST_ID_HEADER] = request.id;
    reply.header(REQUEST_ID_HEADER, request.id);
  });
}
