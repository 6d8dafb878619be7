import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface LoopbackServer {
  /** http://127.0.0.1:<port><path> */
  url(path: string): string;
  port: number;
  /** Paths of the requests received, in order. */
  requests: string[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  close(): Promise<void>;
}

/** A real HTTP server on an ephemeral loopback port; `routes` maps paths to handlers. */
export async function startLoopbackServer(routes: Record<string, Handler>): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  const state = { requests: [] as string[], connections: 0 };
  const server: Server = createServer((request, response) => {
    state.requests.push(request.url ?? "");
    const handler = routes[new URL(request.url ?? "/", "http://x").pathname];
    if (handler) handler(request, response);
    else response.writeHead(404).end();
  });
  server.on("connection", (socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    port,
    get requests() {
      return state.requests;
    },
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Streams `total` bytes starting with `head` in chunks, respecting backpressure, and reports how
 * much was written before the client went away, so tests can tell an early abort from a full read.
 */
export function streamBytes(
  response: ServerResponse,
  options: { total: number; chunkSize: number; head?: Buffer },
): Promise<{ written: number; clientClosedEarly: boolean }> {
  return new Promise((resolve) => {
    let written = 0;
    let done = false;
    const finish = (clientClosedEarly: boolean) => {
      if (done) return;
      done = true;
      resolve({ written, clientClosedEarly });
    };
    response.once("close", () => finish(written < options.total || !response.writableFinished));
    const pump = () => {
      while (written < options.total && !response.destroyed) {
        let chunk = Buffer.alloc(Math.min(options.chunkSize, options.total - written), 0x41);
        if (written === 0 && options.head) chunk = Buffer.concat([options.head, chunk]).subarray(0, chunk.length);
        written += chunk.length;
        if (!response.write(chunk)) {
          response.once("drain", pump);
          return;
        }
      }
      if (written >= options.total && !response.destroyed) response.end(() => finish(false));
    };
    pump();
  });
}
