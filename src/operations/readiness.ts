import type { Logger } from "../logging/index.js";
import type { ServiceMetrics } from "./metrics.js";
import type { Store } from "./store.js";

export interface CheckResult {
  status: "ok" | "failing";
  /** How long the probe took (ok), or why it failed (failing): an error code, never server internals. */
  ms?: number;
  error?: string;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckResult>;
  /** The processing worker processes this service runs; reported, not required (the API serves without them). */
  workers?: { configured: number; ready: number };
}

export interface ReadinessOptions {
  /** Probes that throw when their dependency does not answer, e.g. MySQL's SELECT 1 and Redis's PING. */
  probes: Record<string, { store?: Store; probe: () => Promise<unknown> }>;
  /** True once the models this process needs are loaded. */
  modelsLoaded: () => boolean;
  workers?: () => { configured: number; ready: number };
  /** A probe slower than this counts as failing. */
  timeoutMs?: number;
  log: Logger;
  metrics?: ServiceMetrics;
}

/**
 * Whether this process can serve: every probe answers in time, the models are loaded, and it is not
 * shutting down. Concurrent checks share one round of probes.
 */
export class Readiness {
  private readonly stopping = new AbortController();
  private inFlight: Promise<ReadinessReport> | undefined;
  private readonly lastStatus = new Map<string, CheckResult["status"]>();

  constructor(private readonly options: ReadinessOptions) {}

  /** Aborted when the service starts shutting down. */
  get shutdown(): AbortSignal {
    return this.stopping.signal;
  }

  /** From now on the service reports itself not ready, so balancers stop sending it calls. */
  markShuttingDown(): void {
    this.stopping.abort();
  }

  check(): Promise<ReadinessReport> {
    this.inFlight ??= this.run().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async run(): Promise<ReadinessReport> {
    const timeoutMs = this.options.timeoutMs ?? 2000;
    const entries = await Promise.all(
      Object.entries(this.options.probes).map(async ([name, { store, probe }]): Promise<[string, CheckResult]> => {
        const started = performance.now();
        try {
          await withTimeout(probe(), timeoutMs);
          return [name, { status: "ok", ms: Math.round((performance.now() - started) * 10) / 10 }];
        } catch (error) {
          if (store) this.options.metrics?.storeErrorOf(store, "readiness");
          return [name, { status: "failing", error: describe(error, timeoutMs) }];
        }
      }),
    );
    const checks: Record<string, CheckResult> = Object.fromEntries(entries);
    checks.models = this.options.modelsLoaded() ? { status: "ok" } : { status: "failing", error: "loading" };
    checks.shutdown = this.stopping.signal.aborted ? { status: "failing", error: "shutting down" } : { status: "ok" };
    this.logChanges(checks);
    const report: ReadinessReport = { ready: Object.values(checks).every((c) => c.status === "ok"), checks };
    if (this.options.workers) report.workers = this.options.workers();
    return report;
  }

  // One line when a check starts failing and one when it recovers, not one per probe.
  private logChanges(checks: Record<string, CheckResult>): void {
    for (const [name, result] of Object.entries(checks)) {
      const before = this.lastStatus.get(name) ?? "ok";
      this.lastStatus.set(name, result.status);
      if (before === result.status || name === "shutdown") continue;
      if (result.status === "failing") this.options.log.warn({ check: name, error: result.error }, "readiness check failing");
      else this.options.log.info({ check: name }, "readiness check recovered");
    }
  }
}

class ProbeTimeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout()), ms);
  });
  // A probe that fails after its timeout must not become an unhandled rejection.
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof ProbeTimeout) return `no answer within ${timeoutMs} ms`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && /^[A-Z0-9_]{1,40}$/.test(code)) return code;
  const message = (error as { message?: unknown }).message;
  // ioredis's own fixed messages ("Connection is closed.") name no host or credential.
  if (typeof message === "string" && /^(Connection is closed\.|Command timed out)$/.test(message)) return message;
  return "failed";
}
