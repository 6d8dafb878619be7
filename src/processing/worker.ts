import type { Logger } from "../logging/index.js";
import { retryDelayMs } from "./backoff.js";
import { processProduct } from "./product-processor.js";
import type { Outcome, PhaseTimings, ProcessorDeps } from "./product-processor.js";
import { gaveUpReason } from "./processing-queue.js";
import type { ClaimedProduct, ProcessingQueue } from "./processing-queue.js";

/** Work done after each batch, for the catalogs whose products were processed in it. */
export type AfterBatch = (catalogIds: Set<string>) => Promise<void>;

export interface WorkerOptions {
  /** Unique per worker (host, pid, random): leases name their owner. */
  owner: string;
  batchSize: number;
  /** Products of a batch in flight at once: downloads overlap; encoding is serial anyway. */
  concurrency: number;
  leaseMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryCapMs: number;
  /** How long an idle worker waits before looking for work again (unless notified). */
  idlePollMs: number;
}

export interface BatchReport {
  claimed: number;
  processed: number;
  retried: number;
  failed: number;
  /** Sum over the batch's products. */
  timings: PhaseTimings;
  /** Embedding time of each product that reached the embedding step, in ms. */
  embedMs: number[];
  elapsedMs: number;
}

/** Told of every batch that claimed work, after it is done (e.g. to export metrics). */
export type OnBatch = (report: BatchReport) => void;

/**
 * Claims batches from the queue and processes them until stopped. Any number of workers, in
 * any number of processes, may run against one queue: leases keep them apart, and a worker that
 * dies simply lets its leases expire.
 */
export class ProcessingWorker {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly abort = new AbortController();

  constructor(
    private readonly queue: ProcessingQueue,
    private readonly deps: ProcessorDeps,
    private readonly options: WorkerOptions,
    private readonly log: Logger,
    private readonly afterBatch: AfterBatch = async () => undefined,
    private readonly onBatch: OnBatch = () => undefined,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** New work was queued: look now rather than at the next poll. */
  notify(): void {
    this.wake?.();
  }

  /** Stops claiming; the batch in flight finishes (or its leases expire if the process dies). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  /** Claims and processes one batch; resolves with what happened. */
  async runOnce(): Promise<BatchReport> {
    const started = performance.now();
    const { owner, batchSize, leaseMs, maxAttempts } = this.options;
    const jobs = await this.queue.claim(owner, batchSize, leaseMs, maxAttempts);
    const report: BatchReport = {
      claimed: jobs.length,
      processed: 0,
      retried: 0,
      failed: 0,
      timings: { download: 0, decode: 0, embed: 0, store: 0 },
      embedMs: [],
      elapsedMs: 0,
    };
    let next = 0;
    const touched = new Set<string>();
    const lane = async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        const outcome = await this.settle(job);
        if (outcome.kind === "processed") touched.add(job.catalogId);
        report[outcome.kind === "processed" ? "processed" : outcome.kind === "retry" ? "retried" : "failed"]++;
        for (const phase of Object.keys(report.timings) as (keyof PhaseTimings)[]) {
          report.timings[phase] += outcome.timings[phase];
        }
        if (outcome.timings.embed > 0) report.embedMs.push(outcome.timings.embed);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency, jobs.length) }, lane));
    if (touched.size > 0) {
      try {
        await this.afterBatch(touched);
      } catch (error) {
        // The products are processed either way; the next batch tries again.
        this.log.error({ err: error }, "after-batch work failed");
      }
    }
    report.elapsedMs = performance.now() - started;
    if (jobs.length > 0) {
      const { processed, retried, failed, elapsedMs } = report;
      this.log.info({ owner, claimed: jobs.length, processed, retried, failed, elapsedMs: Math.round(elapsedMs) }, "processing batch done");
      this.onBatch(report);
    }
    return report;
  }

  private async settle(job: ClaimedProduct): Promise<Outcome> {
    const { owner, maxAttempts, retryBaseMs, retryCapMs } = this.options;
    let outcome: Outcome;
    try {
      outcome = await processProduct(job, this.deps, this.abort.signal);
    } catch (error) {
      // An unexpected fault (disk full, model crash): retried like a transient failure, and
      // bounded by maxAttempts like everything else.
      this.log.error({ err: error, catalogId: job.catalogId, productId: job.productId }, "processing fault");
      outcome = { kind: "retry", reason: "internal processing error", timings: { download: 0, decode: 0, embed: 0, store: 0 } };
    }
    if (outcome.kind === "processed") {
      await this.queue.complete(job, owner, outcome.result);
    } else if (outcome.kind === "failed") {
      await this.queue.fail(job, owner, outcome.reason);
    } else if (job.attempts >= maxAttempts) {
      outcome = { ...outcome, kind: "failed", reason: gaveUpReason(job.attempts, outcome.reason) };
      await this.queue.fail(job, owner, outcome.reason);
    } else {
      await this.queue.retryLater(job, owner, outcome.reason, new Date(Date.now() + retryDelayMs(job.attempts, retryBaseMs, retryCapMs)));
    }
    return outcome;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        claimed = (await this.runOnce()).claimed;
      } catch (error) {
        this.log.error({ err: error }, "processing loop error; retrying shortly");
      }
      if (claimed === 0 && this.running) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.idlePollMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
