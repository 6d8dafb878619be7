import type { Logger } from "../logging/index.js";
import type { TextImageMapRefresher } from "./text-image-maps.js";
import type { AfterBatch } from "./worker.js";

/** Brings a catalog's search index in line with MySQL (the search module's IndexSync). */
export interface IndexSyncer {
  sync(catalogId: string): Promise<unknown>;
}

/**
 * What follows every batch, in this order: the processed products become searchable at once
 * (before a map fit that may take seconds), then maps are refreshed, then a refitted map rebuilds
 * the catalog's index. The service's workers, the benchmarks and the tests all run this one
 * sequence.
 */
export function afterBatchWork(index: IndexSyncer, maps: TextImageMapRefresher, log: Logger): AfterBatch {
  const syncIndexes = async (catalogIds: Set<string>) => {
    for (const catalogId of catalogIds) {
      await index.sync(catalogId).catch((error: unknown) => {
        log.warn({ err: error, catalogId }, "vector index not updated now; the service's sweeper will retry");
      });
    }
  };
  return async (catalogIds) => {
    await syncIndexes(catalogIds);
    const refitted = await maps.refresh(catalogIds);
    if (refitted.size > 0) await syncIndexes(refitted);
  };
}
