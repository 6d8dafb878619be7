import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { getPriority, setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { forkedWorkerEnvironment } from "../../config/index.js";
import type { Config } from "../../config/index.js";
import type { Logger } from "../../logging/index.js";
import type { BatchReport, MapFitReport } from "../../processing/index.js";
import type { WorkerMessage } from "../shared/worker-messages.js";

/** The worker processes the service started, as the API process sees them. */
export interface WorkerSupervisor {
  /** New products were queued: wake the workers now rather than at their next poll. */
  notify(): void;
  /** Resolves once every worker has loaded its models (immediately with none). */
  ready: Promise<void>;
  /** Asks each worker to finish its batch and exit; kills those still running after the grace period. */
  stop(): Promise<void>;
  /** Process ids of the running workers, for operators and tests. */
  pids(): number[];
  /** Workers configured, and those running now with their models loaded. */
  status(): { configured: number; ready: number };
}

/** What the service does with its workers' reports (metrics). */
export interface WorkerReportHandlers {
  batch?: (report: BatchReport) => void;
  mapFit?: (report: MapFitReport) => void;
}

/**
 * The service's processing workers run as child processes: model inference is synchronous
 * (25-35 ms an image), so in the API process it would stall every request, and separate processes
 * use every core. A worker that dies is started again; its leased products go back to the queue.
 */
export function startWorkerProcesses(config: Config, log: Logger, reports: WorkerReportHandlers = {}): WorkerSupervisor {
  const count = config.processing.workers;
  const children = new Set<ChildProcess>();
  const readyChildren = new Set<ChildProcess>();
  let stopping = false;
  let readyCount = 0;
  let markReady: () => void = () => undefined;
  const ready = count === 0 ? Promise.resolve() : new Promise<void>((resolve) => (markReady = resolve));
  const env = forkedWorkerEnvironment({ ...config, processing: { ...config.processing, workers: 1 } });

  const spawnWorker = (slot: number) => {
    const { script, execArgv } = workerEntry();
    const child = fork(script, [], { execArgv, env, stdio: "inherit" });
    children.add(child);
    if (child.pid !== undefined) {
      try {
        // Below the service (config.processing.workerNiceness): a search arriving during an import
        // should not wait behind image inference.
        if (config.processing.workerNiceness > 0) setPriority(child.pid, Math.min(19, getPriority() + config.processing.workerNiceness));
      } catch (error) {
        // Not fatal: the workers then only compete with the API on equal terms.
        log.warn({ err: error }, "could not lower the worker process's CPU priority");
      }
    }
    child.on("message", (message: WorkerMessage) => {
      if (message === "ready") {
        readyChildren.add(child);
        if (++readyCount === count) markReady();
      } else if (typeof message !== "object") {
        return;
      } else if (message.kind === "batch") {
        reports.batch?.(message.report);
      } else if (message.kind === "map-fit") {
        reports.mapFit?.(message.report);
      }
    });
    child.once("exit", (code, signal) => {
      children.delete(child);
      readyChildren.delete(child);
      if (stopping) return;
      log.warn({ slot, code, signal }, "processing worker exited; starting another");
      setTimeout(() => !stopping && spawnWorker(slot), 1000).unref();
    });
  };
  for (let slot = 0; slot < count; slot++) spawnWorker(slot);

  return {
    notify() {
      for (const child of children) if (child.connected) child.send("wake" satisfies WorkerMessage);
    },
    ready,
    pids: () => [...children].flatMap((child) => (child.pid === undefined ? [] : [child.pid])),
    status: () => ({ configured: count, ready: readyChildren.size }),
    async stop() {
      stopping = true;
      await Promise.all([...children].map((child) => stopChild(child, config.shutdownGraceMs + 5000)));
    },
  };
}

function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** The compiled entry when running compiled code; the TypeScript source through tsx otherwise. */
function workerEntry(): { script: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith(".ts");
  const script = fileURLToPath(new URL(fromSource ? "../worker/main.ts" : "../worker/main.js", import.meta.url));
  return { script, execArgv: fromSource ? ["--import", "tsx"] : [] };
}
