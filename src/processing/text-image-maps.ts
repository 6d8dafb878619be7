import type { Logger } from "../logging/index.js";
import { fitTextImageMap, TEXT_IMAGE_MAP_RECIPE } from "../embeddings/index.js";
import type { TextImageMap, TextImageSample } from "../embeddings/index.js";

/** Fewer described products than this teach a map nothing reliable. */
export const MIN_TRAINING_SAMPLES = 20;
/** Refit once the catalog has grown by this factor since the last fit. */
export const REFIT_GROWTH = 1.25;

export interface TextImageMapStore {
  /** The version (embeddings + recipe) and size the current map was fitted on, if there is one. */
  current(catalogId: string): Promise<{ modelVersion: string; trainedOn: number } | undefined>;
  /** How many processed products of the catalog have embeddings of this model version. */
  countSamples(catalogId: string, modelVersion: string): Promise<number>;
  samples(catalogId: string, modelVersion: string): Promise<TextImageSample[]>;
  save(catalogId: string, modelVersion: string, map: TextImageMap): Promise<void>;
  /** Runs `work` unless another worker is refitting this catalog right now. */
  exclusively(catalogId: string, work: () => Promise<void>): Promise<void>;
}

/**
 * Keeps each catalog's text-to-image map in step with the catalog: fitted once it has enough
 * described products, refitted when it has grown by REFIT_GROWTH or the models changed.
 */
export async function refreshTextImageMaps(
  catalogIds: Iterable<string>,
  store: TextImageMapStore,
  modelVersion: string,
  log: Logger,
): Promise<void> {
  // A map is tied to the embeddings it was fitted on and to the fitting recipe.
  const mapVersion = `${modelVersion}+${TEXT_IMAGE_MAP_RECIPE}`;
  for (const catalogId of catalogIds) {
    const [current, available] = await Promise.all([store.current(catalogId), store.countSamples(catalogId, modelVersion)]);
    const stale = !current || current.modelVersion !== mapVersion || available >= current.trainedOn * REFIT_GROWTH;
    if (available < MIN_TRAINING_SAMPLES || !stale) continue;
    await store.exclusively(catalogId, async () => {
      const started = performance.now();
      const map = fitTextImageMap(await store.samples(catalogId, modelVersion));
      if (map.trainedOn < MIN_TRAINING_SAMPLES) return;
      await store.save(catalogId, mapVersion, map);
      log.info({ catalogId, trainedOn: map.trainedOn, ms: Math.round(performance.now() - started) }, "text-to-image map fitted");
    });
  }
}
