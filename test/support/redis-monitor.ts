// Redis's MONITOR on a socket of its own, for tests that check the commands a script sent (a
// VSIM's EF inside the query script, which nothing else reports). Not ioredis's monitor(): it
// marks its connection as monitoring a microtask after MONITOR's OK, so on a server busy with
// other test files the lines that arrive in the same read as the OK are taken for replies to no
// command, and the client throws "Command queue state error" (a CI run failed on it).
import { connect } from "node:net";

export interface RedisAddress {
  host?: string | undefined;
  port?: number | undefined;
  username?: string | undefined;
  password?: string | undefined;
}

export interface CommandMonitor {
  stop(): Promise<void>;
}

/** Calls onCommand with each command's arguments (name first) the server runs until stopped. */
export async function monitorCommands(address: RedisAddress, onCommand: (args: string[]) => void): Promise<CommandMonitor> {
  const socket = connect({ host: address.host ?? "127.0.0.1", port: address.port ?? 6379 });
  socket.setEncoding("latin1");
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let pending = "";
    let oks = address.password ? 2 : 1;
    // Before MONITOR's OK an error fails the call; after it, a test sees the commands missing.
    socket.on("error", (error) => oks > 0 && reject(error));
    socket.on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\r\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (oks > 0) {
          if (line !== "+OK") return reject(new Error(`MONITOR refused: ${line.slice(0, 200)}`));
          if (--oks === 0) resolve();
        } else if (line.startsWith("+")) {
          onCommand(monitoredArgs(line));
        }
      }
    });
    if (address.password) socket.write(respCommand(address.username ? ["AUTH", address.username, address.password] : ["AUTH", address.password]));
    socket.write(respCommand(["MONITOR"]));
  });
  return {
    async stop() {
      socket.end();
      await closed;
    },
  };
}

function respCommand(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };

/**
 * A monitor line's arguments: `+<time> [<db> <client>] "arg" "arg" ...`, each quoted as Redis's
 * sdscatrepr writes it (`\"`, `\\`, `\n`... and `\xNN` for other unprintable bytes).
 */
export function monitoredArgs(line: string): string[] {
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
