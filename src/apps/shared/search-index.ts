import type { RedisClient } from "../../storage/redis/index.js";
import type { Config } from "../../config/index.js";
import type { SentenceEncoder } from "../../embeddings/index.js";
import type { Logger } from "../../logging/index.js";
import { IndexSync, VisualSpaces } from "../../search/index.js";
import type { MysqlConnection } from "../../storage/mysql/index.js";
import { MysqlFacetStore, MysqlIndexSource } from "../../storage/mysql/index.js";
import { RedisVectorIndex } from "../../storage/redis/index.js";
import type { LearningOutcome } from "../../storage/redis/index.js";

export interface SearchIndex {
  index: RedisVectorIndex;
  /** The facets of what the index holds, which name selective filters' products (its backfills end before MySQL closes). */
  facets: MysqlFacetStore;
  spaces: VisualSpaces;
  sync: IndexSync;
}

/**
 * The vector index and its sync with MySQL, as both the API and the workers use them.
 * `vsimConnections`: Redis connections for the index's VSIMs alone (the API's; workers do not search).
 * `learned`: told how each filter learning ended (the API's metrics); a failed one is logged here.
 */
export function createSearchIndex(
  config: Config,
  mysql: MysqlConnection,
  redis: RedisClient,
  text: SentenceEncoder,
  log: Logger,
  vsimConnections: readonly RedisClient[] = [],
  learned?: (outcome: LearningOutcome) => void,
): SearchIndex {
  const facets = new MysqlFacetStore(mysql.db, {
    onBackfill: (catalogId, outcome) => {
      if ("error" in outcome) log.warn({ err: outcome.error, catalogId }, "writing a catalog's product facets failed; its selective filters are searched as before until a later search tries again");
      else log.info({ catalogId, products: outcome.products }, "product facets written for a catalog indexed before them");
    },
  });
  const index = new RedisVectorIndex(redis, {
    keyPrefix: config.redis.keyPrefix,
    ef: config.search.ef,
    large: { ef: config.search.efLarge, from: config.search.hnswLargeFrom },
    filterPostings: config.search.filterPostings,
    valueSetFields: config.search.valueSetFields,
    holderCacheEntries: config.search.holderCacheEntries,
    filterLearning: config.search.filterLearning,
    facets,
    onLearning: (outcome, error) => {
      // The search that started it is answered as usual; its own calls report a store that is away.
      if (outcome === "failed") log.warn({ err: error }, "filter learning failed; the filter is searched as before");
      learned?.(outcome);
    },
    vsimConnections,
  });
  const spaces = new VisualSpaces(text);
  const sync = new IndexSync(
    new MysqlIndexSource(mysql.db, mysql.pool),
    index,
    spaces,
    text,
    log,
    { partSize: config.search.partSize, hnswM: config.search.hnswM, hnswLargeFrom: config.search.hnswLargeFrom },
    facets,
  );
  return { index, facets, spaces, sync };
}
