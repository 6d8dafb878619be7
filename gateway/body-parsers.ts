import type { FastifyInstance } from "fastify";
import { GatewayError } from "./error-object.js";

/** Stands in for a body whose content type the gateway does not read; the route decides if that is an error. */
export class UnsupportedBody {
  constructor(readonly contentType: string | undefined) {}
}

/**
 * Replaces the content-type parsers of the (encapsulated) gateway scope:
 * - application/json, where an empty body means "no body" instead of Fastify's
 *   FST_ERR_CTP_EMPTY_JSON_BODY: `curl -X DELETE -H 'content-type: application/json'` on Delete
 *   Multiple Products must delete everything, and clients send that header out of habit;
 * - everything else, read (so bodyLimit still applies) and marked unsupported, so that routes
 *   without a body ignore it and routes with one answer 415 in the documented Error format
 *   rather than Fastify's.
 */
export function installBodyParsers(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, text, done) => {
    if ((text as string).trim() === "") {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text as string));
    } catch (error) {
      done(new GatewayError(400, `request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });
  scope.addContentTypeParser("*", { parseAs: "buffer" }, (request, buffer, done) => {
    done(null, (buffer as Buffer).length === 0 ? undefined : new UnsupportedBody(request.headers["content-type"]));
  });
}
