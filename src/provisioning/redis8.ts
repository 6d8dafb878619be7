// Gives tests, scripts and CI a Redis with vector sets (>= 8) on a machine whose own Redis is 7:
// reuse one already listening, else start a redis-server >= 8 from PATH, else fetch Debian trixie's
// build into a cache folder and run that.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { withFileLock } from "./file-lock.js";
import { describeProbe, isUsableRedis8, majorVersion, probeRedis, type ProbeResult } from "./probe-redis.js";
import { RedisStartError, startRedisChild } from "./redis-process.js";
import { runCommand } from "./run-command.js";
import { ensureTrixieRedis } from "./trixie-redis.js";

export interface ProvisionedRedis {
  url: string;
  port: number;
  version: string;
  startedByUs: boolean;
  stop(): Promise<void>;
}

export interface ProvisionRedis8Options {
  cacheDir: string;
  /** Default 6380, next to the system Redis on 6379. */
  port?: number;
  /** Default `<cacheDir>/redis8/data-<port>`; holds the append-only file and redis.log. */
  dataDir?: string;
  log?: (line: string) => void;
}

const HOST = "127.0.0.1";

interface Launcher {
  label: string;
  resolve(): Promise<{ command: string; args: string[] }>;
}

function reused(port: number, version: string): ProvisionedRedis {
  return { url: `redis://${HOST}:${port}`, port, version, startedByUs: false, stop: async () => undefined };
}

function occupiedError(port: number, probe: ProbeResult): Error {
  return new Error(
    `port ${port} on ${HOST} is held by ${describeProbe(probe)}, which cannot serve vector sets (VADD/VSIM need Redis >= 8). ` +
      `Stop it, pass another port, or set REDIS_URL to a Redis >= 8 server.`,
  );
}

async function redisServerOnPath(log: (line: string) => void): Promise<Launcher | undefined> {
  let out: string;
  try {
    out = (await runCommand("redis-server", ["--version"], { timeoutMs: 10_000 })).stdout;
  } catch {
    return undefined;
  }
  const version = /v=(\d+\.\d+\.\d+)/.exec(out)?.[1];
  if (!version || majorVersion(version) < 8) {
    log(`redis-server on PATH is ${version ?? "of unknown version"}; Redis >= 8 is needed`);
    return undefined;
  }
  return { label: `redis-server ${version} from PATH`, resolve: async () => ({ command: "redis-server", args: [] }) };
}

function trixieLauncher(cacheDir: string, log: (line: string) => void): Launcher {
  let resolved: Promise<{ command: string; args: string[] }> | undefined;
  return {
    label: "Redis 8 from Debian trixie",
    resolve() {
      resolved ??= ensureTrixieRedis({ cacheDir, log }).then((fetched) => {
        log(`using Redis ${fetched.version} from ${fetched.root}`);
        return fetched.serverCommand();
      });
      return resolved;
    },
  };
}

export async function provisionRedis8(opts: ProvisionRedis8Options): Promise<ProvisionedRedis> {
  const log = opts.log ?? (() => undefined);
  const port = opts.port ?? 6380;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`invalid Redis port ${String(port)}: pass an integer between 1 and 65535`);
  }
  const cacheDir = path.resolve(opts.cacheDir);
  const base = path.join(cacheDir, "redis8");
  const dataDir = path.resolve(opts.dataDir ?? path.join(base, `data-${port}`));

  const first = await probeRedis(HOST, port);
  if (isUsableRedis8(first)) {
    log(`reusing Redis ${first.version} already on ${HOST}:${port}`);
    return reused(port, first.version);
  }
  if (first.kind !== "free") throw occupiedError(port, first);

  const launchers: Launcher[] = [];
  const onPath = await redisServerOnPath(log);
  if (onPath) launchers.push(onPath);
  launchers.push(trixieLauncher(cacheDir, log));

  // The first source is made ready before queueing for the port, so a long download never counts
  // against another caller's wait for the port lock.
  await launchers[0]?.resolve();
  await mkdir(base, { recursive: true });
  // Callers sharing the cache start the server one at a time; the later ones find it running.
  return withFileLock(path.join(base, `port-${port}.lock`), { timeoutMs: 120_000, purpose: `starting Redis on port ${port}`, log }, async () => {
    const failures: string[] = [];
    for (const launcher of launchers) {
      const now = await probeRedis(HOST, port);
      if (isUsableRedis8(now)) {
        log(`reusing Redis ${now.version} already on ${HOST}:${port}`);
        return reused(port, now.version);
      }
      if (now.kind !== "free") throw occupiedError(port, now);

      const { command, args } = await launcher.resolve();
      log(`starting ${launcher.label} on ${HOST}:${port}, data in ${dataDir}`);
      let child;
      try {
        child = await startRedisChild({ command, args, port, dataDir, log });
      } catch (err) {
        // Someone outside this cache folder may have taken the port in the meantime.
        if (err instanceof RedisStartError && err.addressInUse) {
          const winner = await probeRedis(HOST, port);
          if (isUsableRedis8(winner)) return reused(port, winner.version);
          throw occupiedError(port, winner);
        }
        throw err;
      }
      const probe = await probeRedis(HOST, port);
      if (isUsableRedis8(probe)) {
        return { url: `redis://${HOST}:${port}`, port, version: probe.version, startedByUs: true, stop: () => child.stop() };
      }
      // A Redis >= 8 may be built without vector sets; fall through to the next source.
      failures.push(`${launcher.label} started but is ${describeProbe(probe)}`);
      await child.stop();
    }
    throw new Error(`no usable Redis 8 could be started on port ${port}: ${failures.join("; ")}. Set REDIS_URL to a Redis >= 8 server.`);
  });
}
