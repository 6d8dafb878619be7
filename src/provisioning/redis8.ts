// Gives the service, tests, scripts and CI a Redis with vector sets (>= 8) on a machine whose own
// Redis is 7: reuse the one this data directory's owner started, else start a redis-server >= 8
// from PATH, else fetch Debian trixie's build into a cache folder and run that.
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { withFileLock } from "./file-lock.js";
import { describeProbe, isUsableRedis8, majorVersion, probeRedis, redisDataDir, type ProbeResult } from "./probe-redis.js";
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
  /**
   * Default `<cacheDir>/redis8/data-<port>`; holds the append-only file and redis.log. Only a Redis
   * serving from this directory is reused: any other on the port is someone else's.
   */
  dataDir?: string;
  /**
   * When the port is held by something else, start on a free port instead, and remember it in
   * `<dataDir>/port` so later calls with the same data directory (workers) find that Redis.
   * Otherwise such a port is an error saying what to do.
   */
  movable?: boolean;
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

/** What holds a port, from this data directory's point of view. */
type Holder = { kind: "ours"; version: string } | { kind: "free" } | { kind: "foreign"; probe: ProbeResult; dir?: string };

async function holderOf(port: number, dataDir: string): Promise<Holder> {
  const probe = await probeRedis(HOST, port);
  if (probe.kind === "free") return { kind: "free" };
  if (!isUsableRedis8(probe)) return { kind: "foreign", probe };
  const dir = await redisDataDir(HOST, port);
  const same = dir !== undefined && (await realpath(dir).catch(() => dir)) === (await realpath(dataDir).catch(() => dataDir));
  return same ? { kind: "ours", version: probe.version } : { kind: "foreign", probe, ...(dir === undefined ? {} : { dir }) };
}

function describeHolder(holder: Extract<Holder, { kind: "foreign" }>): string {
  if (!isUsableRedis8(holder.probe)) return `${describeProbe(holder.probe)}, which cannot serve vector sets (VADD/VSIM need Redis >= 8)`;
  return `a Redis ${holder.probe.version} that this installation did not start (${holder.dir ? `its data is in ${holder.dir}` : "it does not say where its data is"})`;
}

function occupiedError(port: number, holder: Extract<Holder, { kind: "foreign" }>, dataDir: string): Error {
  return new Error(
    `port ${port} on ${HOST} is held by ${describeHolder(holder)}; ours keeps its data in ${dataDir}. ` +
      `Stop that server, pass another port, or set REDIS_URL to a Redis >= 8 server you mean to share.`,
  );
}

/** A port nobody listens on now, on the host Redis is started on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function recordedPort(dataDir: string): Promise<number | undefined> {
  const text = await readFile(path.join(dataDir, "port"), "utf8").catch(() => undefined);
  const port = Number(text?.trim());
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
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
  const preferred = opts.port ?? 6380;
  if (!Number.isInteger(preferred) || preferred < 1 || preferred > 65535) {
    throw new Error(`invalid Redis port ${String(preferred)}: pass an integer between 1 and 65535`);
  }
  const cacheDir = path.resolve(opts.cacheDir);
  const base = path.join(cacheDir, "redis8");
  const dataDir = path.resolve(opts.dataDir ?? path.join(base, `data-${preferred}`));

  // A movable Redis may be running where an earlier start put it.
  const recorded = opts.movable ? await recordedPort(dataDir) : undefined;
  if (recorded !== undefined && recorded !== preferred) {
    const there = await holderOf(recorded, dataDir);
    if (there.kind === "ours") {
      log(`reusing this installation's Redis ${there.version} on ${HOST}:${recorded}`);
      return reused(recorded, there.version);
    }
  }
  let port = preferred;
  const first = await holderOf(port, dataDir);
  if (first.kind === "ours") {
    log(`reusing this installation's Redis ${first.version} on ${HOST}:${port}`);
    return reused(port, first.version);
  }
  if (first.kind === "foreign") {
    if (!opts.movable) throw occupiedError(port, first, dataDir);
    port = await freePort();
    log(`port ${preferred} is held by ${describeHolder(first)}: starting this installation's own Redis on port ${port} instead`);
  }

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
      const now = await holderOf(port, dataDir);
      if (now.kind === "ours") {
        log(`reusing this installation's Redis ${now.version} on ${HOST}:${port}`);
        return reused(port, now.version);
      }
      if (now.kind === "foreign") throw occupiedError(port, now, dataDir);

      const { command, args } = await launcher.resolve();
      log(`starting ${launcher.label} on ${HOST}:${port}, data in ${dataDir}`);
      let child;
      try {
        child = await startRedisChild({ command, args, port, dataDir, log });
      } catch (err) {
        // Someone outside this cache folder may have taken the port in the meantime.
        if (err instanceof RedisStartError && err.addressInUse) {
          const winner = await holderOf(port, dataDir);
          if (winner.kind === "ours") return reused(port, winner.version);
          if (winner.kind === "foreign") throw occupiedError(port, winner, dataDir);
        }
        throw err;
      }
      const probe = await probeRedis(HOST, port);
      if (isUsableRedis8(probe)) {
        if (opts.movable) await writeFile(path.join(dataDir, "port"), `${port}\n`);
        return { url: `redis://${HOST}:${port}`, port, version: probe.version, startedByUs: true, stop: () => child.stop() };
      }
      // A Redis >= 8 may be built without vector sets; fall through to the next source.
      failures.push(`${launcher.label} started but is ${describeProbe(probe)}`);
      await child.stop();
    }
    throw new Error(`no usable Redis 8 could be started on port ${port}: ${failures.join("; ")}. Set REDIS_URL to a Redis >= 8 server.`);
  });
}
