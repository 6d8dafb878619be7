import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A real HTTP server on loopback that plays image host: routes are set per test; hits counted. */
export interface ImageServer {
  url(path: string): string;
  route(path: string, handler: Route): void;
  hits(path: string): number;
  close(): Promise<void>;
}

export async function startImageServer(): Promise<ImageServer> {
  const routes = new Map<string, Route>();
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const handler = routes.get(path);
    if (handler) handler(req, res);
    else res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    route: (path, handler) => routes.set(path, handler),
    hits: (path) => hits.get(path) ?? 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const serveBytes =
  (bytes: Buffer, contentType = "image/jpeg", delayMs = 0): Route =>
  (_req, res) => {
    const send = () => res.writeHead(200, { "content-type": contentType, "content-length": bytes.length }).end(bytes);
    if (delayMs > 0) setTimeout(send, delayMs);
    else send();
  };
