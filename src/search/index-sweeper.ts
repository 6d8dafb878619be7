import type { Logger } from "../logging/index.js";
import type { IndexSync } from "./index-sync.js";

export interface SweepIntervals {
  /** How often queued changes are applied. */
  intervalMs: number;
  /** How often one process among all those sharing the index drops indexes of deleted catalogs. */
  orphansEveryMs: number;
}

/** Applies index changes that could not be applied at once (Redis away, a crash), every intervalMs. */
export function startIndexSweeper(sync: IndexSync, intervals: SweepIntervals, log: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let failing = false;
  // A shutdown does not wait out the orphan sweep's scan of every key (seconds in a large keyspace):
  // it stops between two pages, and the sweep is done once its claim runs out.
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const sweep = async () => {
    try {
      // Each sweep asks for the orphan sweep; the index grants it to one process an interval.
      await sync.sweep({ orphansEveryMs: intervals.orphansEveryMs, signal: stopping.signal });
      if (failing) log.info({}, "vector index sweep succeeded again");
      failing = false;
    } catch (error) {
      if (stopping.signal.aborted) return;
      if (!failing) log.warn({ err: error }, "vector index sweep failed; retrying");
      failing = true;
    }
    if (!stopped) timer = setTimeout(() => (running = sweep()), intervals.intervalMs).unref();
  };
  let running = sweep();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      stopping.abort();
      await running;
    },
  };
}
