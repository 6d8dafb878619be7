import { createReadStream, existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorObject } from "../../../gateway/index.js";
import { packageRoot } from "./package-root.js";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

// One plain file name of the folder: no slash, no leading dot, so nothing outside it is reachable.
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9]+)+$/;

// The page talks only to its own origin; product images may come from PUBLIC_URL's host.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src * data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The web page (README "Web page"): the static files of the repository's `ui/` folder under
 * /ui. No API key: the page holds no data; it asks the REST API with the key its user types in.
 */
export function registerUiRoute(server: FastifyInstance, dir: string | undefined = findUiDir()): void {
  const send = async (request: FastifyRequest, reply: FastifyReply, file: string) => {
    const type = CONTENT_TYPES[extname(file)];
    const path = dir && type && FILE_NAME.test(file) ? join(dir, file) : undefined;
    const info = path ? await stat(path).catch(() => undefined) : undefined;
    if (!path || !info?.isFile()) return reply.code(404).send(errorObject(request, 404, "no such file"));
    return reply
      .header("content-type", type)
      .header("content-length", info.size)
      .header("last-modified", info.mtime.toUTCString())
      .header("cache-control", "public, max-age=60")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", CONTENT_SECURITY_POLICY)
      .header("referrer-policy", "no-referrer")
      .send(createReadStream(path));
  };
  server.get("/ui", (request, reply) => send(request, reply, "index.html"));
  server.get("/ui/", (request, reply) => send(request, reply, "index.html"));
  server.get<{ Params: { file: string } }>("/ui/:file", (request, reply) => send(request, reply, request.params.file));
}

/** The `ui/` folder next to package.json, when it holds the page. */
export function findUiDir(): string | undefined {
  const ui = join(packageRoot(), "ui");
  return existsSync(join(ui, "index.html")) ? ui : undefined;
}
