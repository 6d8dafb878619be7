import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Longest URL a request log line carries; longer ones are cut and marked with "...". */
export const LOGGED_URL_LENGTH = 256;

/**
 * One line per request when its response is sent: method, route pattern (`unmatched` when no
 * route did), status, time, and the URL cut to {@link LOGGED_URL_LENGTH} characters, so a long or
 * hostile URL cannot blow a line up. No headers: the key never reaches the log. Replaces
 * Fastify's own pair of lines (`disableRequestLogging` on the listener).
 */
export function installRequestLog(server: FastifyInstance): void {
  server.addHook("onResponse", async (request: FastifyRequest, reply: FastifyReply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? "unmatched",
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        url: cut(request.url),
      },
      "request completed",
    );
  });
}

function cut(url: string): string {
  return url.length <= LOGGED_URL_LENGTH ? url : `${url.slice(0, LOGGED_URL_LENGTH)}...`;
}
