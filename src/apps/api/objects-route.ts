import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { errorObject } from "../../../gateway/index.js";
import { isObjectKey } from "../../storage/objects/index.js";
import type { LocalObjectStore } from "../../storage/objects/index.js";

/**
 * Serves the stored product images. No API key: browsers load them from <img src>, and a key
 * is the catalog's UUID plus an HMAC of the image's content hash under the service's secret, so
 * an objectUrl is itself the capability. Files stored under the bare hash (before the HMAC) are
 * served as before.
 */
export function registerObjectsRoute(server: FastifyInstance, store: LocalObjectStore): void {
  server.get<{ Params: { catalogId: string; file: string } }>("/objects/:catalogId/:file", async (request, reply) => {
    const key = `${request.params.catalogId}/${request.params.file}`;
    const path = isObjectKey(key) ? store.pathOf(key) : undefined;
    const size = path && (await stat(path).catch(() => undefined))?.size;
    if (!path || size === undefined) {
      return reply.code(404).send(errorObject(request, 404, "no such object"));
    }
    return reply
      .header("content-type", "image/jpeg")
      .header("content-length", size)
      .header("cache-control", "public, max-age=31536000, immutable")
      .send(createReadStream(path));
  });
}
