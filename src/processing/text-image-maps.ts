import type { Logger } from "../logging/index.js";
import { safeError } from "../logging/index.js";
import { fitTextImageMap, TEXT_IMAGE_MAP_RECIPE } from "../embeddings/index.js";
import type { TextImageMap, TextImageSample } from "../embeddings/index.js";

/** Fewer described products than this teach a map nothing reliable. */
export const MIN_TRAINING_SAMPLES = 20;
/** Refit once the catalog's described products have grown by this factor since the last fit. */
export const REFIT_GROWTH = 1.25;
/**
 * The factor once the last fit already used a full sample (maxSamples): a refit then learns from
 * another sample of the same size, so it is worth its cost (a fit, and a rebuild of the catalog's
 * index) only when the catalog has changed a lot.
 */
export const SAMPLED_REFIT_GROWTH = 2;
/**
 * The factors while more of the catalog's products wait to be processed (an import under way).
 * Every refit rebuilds the catalog's whole index (about 4 ms of CPU per product, Redis's VADD and
 * the projection: `npm run bench:map-fit`), so refitting at REFIT_GROWTH during an import rebuilds
 * five times the catalog's size in all, and held a 100k import to 18-20 images/s while the index
 * of 80k products was rebuilt. Doubling keeps that to twice the catalog while the map still
 * learns; once it has a full sample the import's end is awaited (the factors above then apply),
 * unless the catalog never stops growing.
 */
export const IMPORT_REFIT_GROWTH = 2;
export const IMPORT_SAMPLED_REFIT_GROWTH = 8;
/** First wait after a failed fit; each further failure in a row waits four times longer, up to RETRY_CAP_MS. */
export const RETRY_BASE_MS = 60_000;
export const RETRY_CAP_MS = 60 * 60_000;

export interface StoredMapState {
  /** The embeddings' version and the recipe the map was fitted with. */
  modelVersion: string;
  /** Samples the map was fitted on. */
  trainedOn: number;
  /** Described products the catalog had when it was fitted. */
  describedAtFit: number;
}

export interface TextImageMapStore {
  current(catalogId: string): Promise<StoredMapState | undefined>;
  /** Whether some of the catalog's products still wait to be processed. */
  importing(catalogId: string): Promise<boolean>;
  /** How many processed products of the catalog are described and have embeddings of this model version. */
  countDescribed(catalogId: string, modelVersion: string): Promise<number>;
  /**
   * The described products' embeddings: all of them up to `limit`, else `limit` of them chosen by a
   * hash of the product id (an even, repeatable sample that does not favour old or new products).
   */
  samples(catalogId: string, modelVersion: string, limit: number): Promise<TextImageSample[]>;
  /** Replaces the catalog's map, whatever its size, and clears a recorded failure; returns the bytes stored. */
  save(catalogId: string, modelVersion: string, map: TextImageMap, describedAtFit: number): Promise<number>;
  /** The failures in a row of the catalog's fits, and when the next may run; undefined after a success. */
  failure(catalogId: string): Promise<{ failures: number; retryAt: Date } | undefined>;
  recordFailure(catalogId: string, reason: string, failures: number, retryAt: Date): Promise<void>;
  /** Runs `work` unless another worker is refitting this catalog right now. */
  exclusively(catalogId: string, work: () => Promise<void>): Promise<void>;
}

export interface MapFitReport {
  catalogId: string;
  outcome: "fitted" | "failed";
  seconds: number;
  /** Samples fitted on and bytes stored (fitted only). */
  trainedOn?: number;
  bytes?: number;
}

export interface TextImageMapRefreshOptions {
  /** Most samples one fit reads: bounds a fit's time and memory whatever the catalog's size. */
  maxSamples: number;
  /** Told of every fit that ran (e.g. for metrics). */
  onFit?: (report: MapFitReport) => void;
  now?: () => Date;
}

/**
 * Keeps each catalog's text-to-image map in step with the catalog: fitted once it has enough
 * described products, refitted when they have grown by REFIT_GROWTH (SAMPLED_REFIT_GROWTH past
 * maxSamples; the IMPORT_ factors while products wait to be processed) or the models changed. A
 * fit or save that fails keeps the last good map, is logged once and recorded, and is tried again
 * only after a back-off, not after every batch.
 */
export class TextImageMapRefresher {
  private readonly mapVersion: string;
  private readonly now: () => Date;

  constructor(
    private readonly store: TextImageMapStore,
    /** The version of the embeddings the maps are fitted on. */
    private readonly modelVersion: string,
    private readonly options: TextImageMapRefreshOptions,
    private readonly log: Logger,
  ) {
    // A map is tied to the embeddings it was fitted on and to the fitting recipe.
    this.mapVersion = `${modelVersion}+${TEXT_IMAGE_MAP_RECIPE}`;
    this.now = options.now ?? (() => new Date());
  }

  /** Fits the maps that are due; returns the catalogs whose map changed. */
  async refresh(catalogIds: Iterable<string>): Promise<Set<string>> {
    const refitted = new Set<string>();
    for (const catalogId of catalogIds) {
      if ((await this.due(catalogId)) === undefined) continue;
      await this.store.exclusively(catalogId, async () => {
        // Asked again under the lock: another worker may have fitted it since the first answer
        // (seen in a 100k import: two workers fitting the same catalog 20 s apart).
        const described = await this.due(catalogId);
        if (described !== undefined && (await this.fit(catalogId, described))) refitted.add(catalogId);
      });
    }
    return refitted;
  }

  /** The catalog's described products when its map is due for a fit; undefined when it is not. */
  private async due(catalogId: string): Promise<number | undefined> {
    const [current, described, failure] = await Promise.all([
      this.store.current(catalogId),
      this.store.countDescribed(catalogId, this.modelVersion),
      this.store.failure(catalogId),
    ]);
    if (described < MIN_TRAINING_SAMPLES) return undefined;
    if (failure && failure.retryAt > this.now()) return undefined;
    if (!current || current.modelVersion !== this.mapVersion) return described;
    const sampled = current.trainedOn >= this.options.maxSamples;
    if (described < current.describedAtFit * (sampled ? SAMPLED_REFIT_GROWTH : REFIT_GROWTH)) return undefined;
    // Asked last: a refit is rarely due, and this costs a query.
    if (!(await this.store.importing(catalogId))) return described;
    return described >= current.describedAtFit * (sampled ? IMPORT_SAMPLED_REFIT_GROWTH : IMPORT_REFIT_GROWTH) ? described : undefined;
  }

  private async fit(catalogId: string, described: number): Promise<boolean> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const samples = await this.store.samples(catalogId, this.modelVersion, this.options.maxSamples);
      if (samples.length < MIN_TRAINING_SAMPLES) return false;
      const map = fitTextImageMap(samples);
      if (map.trainedOn < MIN_TRAINING_SAMPLES) return false;
      const bytes = await this.store.save(catalogId, this.mapVersion, map, Math.max(described, samples.length));
      this.options.onFit?.({ catalogId, outcome: "fitted", seconds: seconds(), trainedOn: map.trainedOn, bytes });
      this.log.info({ catalogId, trainedOn: map.trainedOn, described, bytes, ms: Math.round(seconds() * 1000) }, "text-to-image map fitted");
      return true;
    } catch (error) {
      const previous = await this.store.failure(catalogId).catch(() => undefined);
      const failures = (previous?.failures ?? 0) + 1;
      const waitMs = Math.min(RETRY_BASE_MS * 4 ** (failures - 1), RETRY_CAP_MS);
      const reason = failureReason(error);
      await this.store
        .recordFailure(catalogId, reason, failures, new Date(this.now().getTime() + waitMs))
        .catch((recordError: unknown) => this.log.warn({ catalogId, err: recordError }, "text-to-image map failure not recorded"));
      this.options.onFit?.({ catalogId, outcome: "failed", seconds: seconds() });
      this.log.warn({ catalogId, failures, retryInMs: waitMs, err: error }, "text-to-image map fit failed; the catalog keeps its last map");
      return false;
    }
  }
}

/** A one-line reason for operators: the error's type and code, never the values a driver error carries. */
export function failureReason(error: unknown): string {
  let e: ReturnType<typeof safeError> | undefined = safeError(error);
  // The innermost cause says most (drizzle's wrapper only says "query failed").
  const parts: string[] = [];
  for (let depth = 0; e && depth < 4; depth++, e = e.cause) {
    parts.push([e.type, e.code, e.message].filter((p) => p !== undefined && p !== "").join(" "));
  }
  return parts.join(" <- ").slice(0, 300);
}
