import type { Logger } from "../logging/index.js";
import type { IndexSync } from "./index-sync.js";

const ORPHAN_CHECK_MS = 60_000;

/** Applies index changes that could not be applied at once (Redis away, a crash), every intervalMs. */
export function startIndexSweeper(sync: IndexSync, intervalMs: number, log: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;
  let orphansCheckedAt = 0;
  const sweep = async () => {
    try {
      // Queued changes every interval; indexes of deleted catalogs at start and then once a minute.
      const orphans = Date.now() - orphansCheckedAt >= ORPHAN_CHECK_MS;
      await sync.sweep({ orphans });
      if (orphans) orphansCheckedAt = Date.now();
      if (failing) log.info({}, "vector index sweep succeeded again");
      failing = false;
    } catch (error) {
      if (!failing) log.warn({ err: error }, "vector index sweep failed; retrying");
      failing = true;
    }
    if (!stopped) timer = setTimeout(() => (running = sweep()), intervalMs).unref();
  };
  let running = sweep();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
