import { connect, createServer } from "node:net";
import type { Server, Socket } from "node:net";

export interface TcpProxy {
  /** host:port the proxy listens on. */
  port: number;
  /** Refuses new connections and cuts the open ones, as a dead server would. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A loopback TCP proxy to `target`, to take a dependency away from a running service and give it back. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const newServer = (): Server =>
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      track(client);
      track(upstream);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
    });
  const stop = (server: Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });

  let server: Server | undefined = newServer();
  const port = await listen(server, 0);
  return {
    port,
    async cut() {
      if (server) await stop(server);
      server = undefined;
    },
    async restore() {
      if (server) return;
      server = newServer();
      await listen(server, port);
    },
    async close() {
      if (server) await stop(server);
      server = undefined;
    },
  };
}
