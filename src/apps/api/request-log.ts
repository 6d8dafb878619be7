import { LogController } from "fastify";
import type { FastifyReply, FastifyRequest } from "fastify";

/** Longest URL a request log line carries; longer ones are cut and marked with "...". */
export const LOGGED_URL_LENGTH = 256;

/**
 * One line per request, when its response is sent: method, route pattern (`unmatched` when no
 * route did), status, time, and the URL cut to {@link LOGGED_URL_LENGTH} characters, so a long or
 * hostile URL cannot blow a line up. No headers: the key never reaches the log. Fastify's own
 * "incoming request" line is dropped: the completed line says everything it did.
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? "unmatched",
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      url: cut(request.url),
    };
    // The error itself, if any, was logged where it was handled (the RPC layer, the gateway).
    if (error) request.log.warn({ ...line, failed: error.name }, "request completed");
    else request.log.info(line, "request completed");
  }
}

function cut(url: string): string {
  return url.length <= LOGGED_URL_LENGTH ? url : `${url.slice(0, LOGGED_URL_LENGTH)}...`;
}
