// Runs one server binary (redis-server, mariadbd) as a child for the lifetime of its owner: output
// to a log file, taken down with this process, ready only once the server on the port is provably
// this child, and stopped cleanly (SIGTERM, then SIGKILL after a grace period).
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";

export interface ServerChildOptions<T> {
  /** For messages: "redis-server", "mariadbd". */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  port: number;
  logFile: string;
  timeoutMs: number;
  pollMs: number;
  /**
   * What the server on the port says once it is this child (not another that won a race for the
   * port), or undefined while it is not ready.
   */
  ready(child: ChildProcess): Promise<T | undefined>;
  /** Matches the log line of a server that could not bind its port. */
  addressInUse: RegExp;
  /** How long a clean stop may take before the server is killed. */
  stopGraceMs: number;
  /** Appended to every failure: what the operator can do. */
  remedy: string;
  /** Added to the timeout failure: what can make a start slow. */
  slowStartHint?: string;
  log: (line: string) => void;
}

export interface ServerChild<T> {
  pid: number;
  logFile: string;
  /** What ready() said. */
  answer: T;
  stop(): Promise<void>;
}

export class ServerStartError extends Error {
  constructor(
    message: string,
    readonly logTail: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
  }
}

export async function startServerChild<T>(opts: ServerChildOptions<T>): Promise<ServerChild<T>> {
  const { name, port, logFile, log } = opts;
  // The file descriptor goes straight to the child, so logging costs the event loop nothing and
  // keeps working if this process stops reading.
  const fd = openSync(logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(opts.command, opts.args, { cwd: opts.cwd, detached: false, stdio: ["ignore", fd, fd], env: opts.env });
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

  const deadline = Date.now() + opts.timeoutMs;
  let answer: T | undefined;
  for (;;) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      process.removeListener("exit", killOnExit);
      const tail = await logTail(logFile);
      const why = spawnError ? `could not be started (${spawnError.message})` : `exited with ${child.exitCode ?? child.signalCode}`;
      throw new ServerStartError(`${name} on port ${port} ${why}. Log (${logFile}):\n${tail}\n${opts.remedy}`, tail, opts.addressInUse.test(tail));
    }
    answer = await opts.ready(child);
    if (answer !== undefined) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await waitForExit(child, 5000);
      process.removeListener("exit", killOnExit);
      const hint = opts.slowStartHint ? `${opts.slowStartHint} ` : "";
      throw new ServerStartError(
        `${name} on port ${port} did not answer within ${Math.round(opts.timeoutMs / 1000)} s and was killed. ` +
          `Log (${logFile}):\n${await logTail(logFile)}\n${hint}${opts.remedy}`,
        "",
        false,
      );
    }
    await new Promise((r) => setTimeout(r, opts.pollMs));
  }
  log(`${name} pid ${child.pid} answers on 127.0.0.1:${port} (log: ${logFile})`);

  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    logFile,
    answer,
    stop() {
      stopping ??= (async () => {
        // SIGTERM is each server's clean shutdown: Redis fsyncs its append-only file, InnoDB flushes.
        child.kill("SIGTERM");
        if (!(await waitForExit(child, opts.stopGraceMs))) {
          log(`${name} pid ${child.pid} ignored SIGTERM for ${Math.round(opts.stopGraceMs / 1000)} s; killing it`);
          child.kill("SIGKILL");
          await waitForExit(child, 5000);
        }
        process.removeListener("exit", killOnExit);
      })();
      return stopping;
    },
  };
}

export async function logTail(file: string, lines = 15): Promise<string> {
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
