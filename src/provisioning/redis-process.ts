// Runs one redis-server child for the lifetime of its owner and stops it cleanly: persistence is on,
// so a graceful stop is what lets the next start find the vectors again.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { pingRedis, redisProcessId } from "./probe-redis.js";

export interface RedisChild {
  pid: number;
  logFile: string;
  stop(): Promise<void>;
}

export class RedisStartError extends Error {
  constructor(
    message: string,
    readonly logTail: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
  }
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

async function logTail(file: string, lines = 15): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export async function startRedisChild(opts: {
  command: string;
  args: string[];
  port: number;
  dataDir: string;
  startTimeoutMs?: number;
  log?: (line: string) => void;
}): Promise<RedisChild> {
  const log = opts.log ?? (() => undefined);
  const timeoutMs = opts.startTimeoutMs ?? 20_000;
  await mkdir(opts.dataDir, { recursive: true });
  const logFile = path.join(opts.dataDir, "redis.log");
  // The file descriptor goes straight to the child, so logging costs the event loop nothing and
  // keeps working if this process stops reading.
  const fd = openSync(logFile, "a");
  const env = { ...process.env };
  // A host LD_PRELOAD would be loaded into a binary built against another glibc.
  delete env.LD_PRELOAD;
  let child: ChildProcess;
  try {
    child = spawn(opts.command, [...opts.args, ...serverArgs(opts.port, opts.dataDir)], {
      cwd: opts.dataDir,
      detached: false,
      stdio: ["ignore", fd, fd],
      env,
    });
  } finally {
    closeSync(fd);
  }
  // Unreferenced so a library user is not kept alive by the server; the exit hook below still
  // takes the server down with this process.
  child.unref();
  const killOnExit = () => {
    child.kill("SIGTERM");
  };
  process.once("exit", killOnExit);

  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      process.removeListener("exit", killOnExit);
      const tail = await logTail(logFile);
      const why = spawnError ? `could not be started (${spawnError.message})` : `exited with ${child.exitCode ?? child.signalCode}`;
      throw new RedisStartError(
        `redis-server on port ${opts.port} ${why}. Log (${logFile}):\n${tail}\n` +
          `Fix the cause above, choose another port, or set REDIS_URL to a Redis >= 8 server.`,
        tail,
        /address already in use/i.test(tail),
      );
    }
    // A PONG alone could come from another server that won a race for the port.
    if ((await pingRedis("127.0.0.1", opts.port, 500)) && (await redisProcessId("127.0.0.1", opts.port)) === child.pid) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await waitForExit(child, 5000);
      process.removeListener("exit", killOnExit);
      throw new RedisStartError(
        `redis-server on port ${opts.port} did not answer PING within ${Math.round(timeoutMs / 1000)} s and was killed. ` +
          `Log (${logFile}):\n${await logTail(logFile)}\n` +
          `A large append-only file in ${opts.dataDir} can slow the start: delete it if the data is disposable, ` +
          `or set REDIS_URL to a Redis >= 8 server.`,
        "",
        false,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  log(`redis-server pid ${child.pid} answers on 127.0.0.1:${opts.port} (log: ${logFile})`);

  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    logFile,
    stop() {
      stopping ??= (async () => {
        // SIGTERM makes Redis fsync the append-only file and exit, the same as SHUTDOWN.
        child.kill("SIGTERM");
        if (!(await waitForExit(child, 15_000))) {
          log(`redis-server pid ${child.pid} ignored SIGTERM for 15 s; killing it`);
          child.kill("SIGKILL");
          await waitForExit(child, 5000);
        }
        process.removeListener("exit", killOnExit);
      })();
      return stopping;
    },
  };
}
