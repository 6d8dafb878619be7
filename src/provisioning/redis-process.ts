// Runs one redis-server child for the lifetime of its owner and stops it cleanly: persistence is on,
// so a graceful stop is what lets the next start find the vectors again.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { childEnvironment } from "../config/index.js";
import { pingRedis, redisProcessId } from "./probe-redis.js";
import { startServerChild } from "./server-child.js";

export { ServerStartError as RedisStartError } from "./server-child.js";

export interface RedisChild {
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

export function serverArgs(port: number, dataDir: string): string[] {
  // Loopback only: protected mode permits loopback clients, so it can stay on.
  return [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--daemonize", "no",
    "--save", "",
    "--appendonly", "yes",
    "--appendfsync", "everysec",
    "--dir", dataDir,
  ];
}

export async function startRedisChild(opts: {
  command: string;
  args: string[];
  port: number;
  dataDir: string;
  /** Server options after the usual ones (cluster mode, say). */
  extraArgs?: string[];
  startTimeoutMs?: number;
  log?: (line: string) => void;
}): Promise<RedisChild> {
  await mkdir(opts.dataDir, { recursive: true });
  // A host LD_PRELOAD would be loaded into a binary built against another glibc.
  const env = childEnvironment({ LD_PRELOAD: undefined });
  const child = await startServerChild({
    name: "redis-server",
    command: opts.command,
    args: [...opts.args, ...serverArgs(opts.port, opts.dataDir), ...(opts.extraArgs ?? [])],
    cwd: opts.dataDir,
    env,
    port: opts.port,
    logFile: path.join(opts.dataDir, "redis.log"),
    timeoutMs: opts.startTimeoutMs ?? 20_000,
    pollMs: 100,
    // A PONG alone could come from another server that won a race for the port.
    ready: async (c) =>
      (await pingRedis("127.0.0.1", opts.port, 500)) && (await redisProcessId("127.0.0.1", opts.port)) === c.pid ? true : undefined,
    addressInUse: /address already in use/i,
    stopGraceMs: 15_000,
    remedy: "Fix the cause above, choose another port, or set REDIS_URL to a Redis >= 8 server.",
    slowStartHint: `A large append-only file in ${opts.dataDir} can slow the start: delete it if the data is disposable.`,
    log: opts.log ?? (() => undefined),
  });
  return { pid: child.pid, logFile: child.logFile, stop: () => child.stop() };
}
