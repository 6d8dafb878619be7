import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { getPriority, setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import type { Config } from "../config/index.js";
import type { Logger } from "../logging/index.js";

export interface WorkerProcesses {
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

/** What a worker process tells the service after each batch that claimed work (for metrics). */
export interface WorkerBatchMessage {
  kind: "batch";
  processed: number;
  retried: number;
  failed: number;
  /** Embedding time of each product that reached the embedding step, in ms. */
  embedMs: number[];
}

/** What a worker process tells the service after each text-image map fit (for metrics). */
export interface WorkerMapFitMessage {
  kind: "map-fit";
  outcome: "fitted" | "failed";
  seconds: number;
}

/** Messages between the service and its worker processes. */
export type WorkerMessage = "wake" | "ready" | WorkerBatchMessage | WorkerMapFitMessage;

function isMessageOf<K extends string>(message: unknown, kind: K): message is { kind: K } {
  return typeof message === "object" && message !== null && (message as { kind?: unknown }).kind === kind;
}

export interface WorkerReports {
  batch?: (batch: WorkerBatchMessage) => void;
  mapFit?: (fit: WorkerMapFitMessage) => void;
}

/** The serialised, already-validated configuration a forked worker runs with. */
export const WORKER_CONFIG_ENV = "VITRINE_WORKER_CONFIG";

/**
 * The service's processing workers run as child processes: model inference is synchronous
 * (25-35 ms an image), so in the API process it would stall every request, and separate processes
 * use every core. A worker that dies is started again; its leased products go back to the queue.
 */
export function startWorkerProcesses(config: Config, log: Logger, reports: WorkerReports = {}): WorkerProcesses {
  const count = config.processing.workers;
  const children = new Set<ChildProcess>();
  const readyChildren = new Set<ChildProcess>();
  let stopping = false;
  let readyCount = 0;
  let markReady: () => void = () => undefined;
  const ready = count === 0 ? Promise.resolve() : new Promise<void>((resolve) => (markReady = resolve));
  const workerConfig = JSON.stringify({ ...config, processing: { ...config.processing, workers: 1 } });

  const spawnWorker = (slot: number) => {
    const { script, execArgv } = workerEntry();
    const child = fork(script, [], { execArgv, env: { ...process.env, [WORKER_CONFIG_ENV]: workerConfig }, stdio: "inherit" });
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
      } else if (isMessageOf(message, "batch")) {
        reports.batch?.(message as WorkerBatchMessage);
      } else if (isMessageOf(message, "map-fit")) {
        reports.mapFit?.(message as WorkerMapFitMessage);
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
  const script = fileURLToPath(new URL(fromSource ? "../worker-main.ts" : "../worker-main.js", import.meta.url));
  return { script, execArgv: fromSource ? ["--import", "tsx"] : [] };
}
