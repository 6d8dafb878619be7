import type { RedisClient } from "../storage/redis/index.js";
import type { Config } from "../config/index.js";
import type { TextEncoder } from "../embeddings/index.js";
import type { Logger } from "../logging/index.js";
import { IndexSync, VisualSpaces } from "../search/index.js";
import type { MysqlConnection } from "../storage/mysql/index.js";
import { MysqlIndexSource } from "../storage/mysql/index.js";
import { RedisVectorIndex } from "../storage/redis/index.js";

export interface SearchIndex {
  index: RedisVectorIndex;
  spaces: VisualSpaces;
  sync: IndexSync;
}

/** The vector index and its sync with MySQL, as both the API and the workers use them. */
export function createSearchIndex(config: Config, mysql: MysqlConnection, redis: RedisClient, text: TextEncoder, log: Logger): SearchIndex {
  const index = new RedisVectorIndex(redis, { keyPrefix: config.redis.keyPrefix, ef: config.search.ef, filterPostings: config.search.filterPostings });
  const spaces = new VisualSpaces(text);
  const sync = new IndexSync(new MysqlIndexSource(mysql.db, mysql.pool), index, spaces, text, log);
  return { index, spaces, sync };
}

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
