// Redis's MONITOR on a socket of its own, for tests that check the commands a script sent (a
// VSIM's EF inside the query script, which nothing else reports). Not ioredis's monitor(): it
// marks its connection as monitoring a microtask after MONITOR's OK, so on a server busy with
// other test files the lines that arrive in the same read as the OK are taken for replies to no
// command, and the client throws "Command queue state error" (a CI run failed on it).
import { connect } from "node:net";
import type { RedisOptions } from "ioredis";
import { forEachPrimary, type RedisClient } from "../../src/storage/redis/index.js";

export interface CommandMonitor {
  stop(): Promise<void>;
}

/**
 * Calls onCommand with each command's arguments (name first) the server at `address` (a node's
 * ioredis options: the test servers take no password) runs until stopped, and who sent it: a
 * client's address, or "lua" for a command a script called.
 */
export async function monitorCommands(address: Pick<RedisOptions, "host" | "port">, onCommand: (args: string[], client: string) => void): Promise<CommandMonitor> {
  const socket = connect({ host: address.host ?? "127.0.0.1", port: address.port ?? 6379 });
  socket.setEncoding("latin1");
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let pending = "";
    let monitoring = false;
    // Before MONITOR's OK an error fails the call; after it, a test sees the commands missing.
    socket.on("error", (error) => !monitoring && reject(error));
    socket.on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\r\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (monitoring) {
          if (line.startsWith("+")) onCommand(monitoredArgs(line), monitoredClient(line));
        } else if (line === "+OK") {
          monitoring = true;
          resolve();
        } else {
          socket.destroy();
          return reject(new Error(`MONITOR refused: ${line.slice(0, 200)}`));
        }
      }
    });
    socket.write("MONITOR\r\n");
  });
  return {
    async stop() {
      socket.end();
      await closed;
    },
  };
}

/**
 * The VSIMs every primary of `redis` runs during `work` on the sets whose key passes `ofSet`: who
 * sent each (a client's address, or "lua") and its arguments after the query vector.
 */
export async function vsimsDuring(redis: RedisClient, ofSet: (key: string) => boolean, work: () => Promise<void>): Promise<{ client: string; args: string[] }[]> {
  const seen = await commandsDuring(redis, (args) => args[0]?.toUpperCase() === "VSIM" && ofSet(args[1] ?? ""), work);
  return seen.map(({ client, args }) => ({ client, args: args.slice(4) }));
}

/** The commands (name first) that pass `accept` every primary of `redis` runs during `work`, and who sent each. */
export async function commandsDuring(redis: RedisClient, accept: (args: string[]) => boolean, work: () => Promise<void>): Promise<{ client: string; args: string[] }[]> {
  const seen: { client: string; args: string[] }[] = [];
  const monitors = await forEachPrimary(redis, (node) =>
    monitorCommands(node.options, (args, client) => {
      if (accept(args)) seen.push({ client, args });
    }),
  );
  try {
    await work();
    // MONITOR's lines may trail the replies.
    await new Promise((r) => setTimeout(r, 200));
    return seen;
  } finally {
    await Promise.all(monitors.map((m) => m.stop()));
  }
}

/** A monitor line's client: `+<time> [<db> <client>] ...`. */
function monitoredClient(line: string): string {
  const open = line.indexOf("[");
  return line.slice(line.indexOf(" ", open) + 1, line.indexOf("]", open));
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };

/**
 * A monitor line's arguments: `+<time> [<db> <client>] "arg" "arg" ...`, each quoted as Redis's
 * sdscatrepr writes it (`\"`, `\\`, `\n`... and `\xNN` for other unprintable bytes).
 */
function monitoredArgs(line: string): string[] {
  const args: string[] = [];
  for (let i = line.indexOf('"'); i >= 0; i = line.indexOf('"', i + 1)) {
    let arg = "";
    for (i++; i < line.length && line[i] !== '"'; i++) {
      if (line[i] !== "\\") {
        arg += line[i];
      } else if (line[i + 1] === "x") {
        arg += String.fromCharCode(parseInt(line.slice(i + 2, i + 4), 16));
        i += 3;
      } else {
        arg += ESCAPES[line[i + 1]!] ?? line[i + 1];
        i++;
      }
    }
    args.push(arg);
  }
  return args;
}
