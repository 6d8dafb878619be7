// The processing pipeline as the worker processes assemble it, in one place: the worker process
// runs it, and tests and benchmarks that drive the pipeline (or complete products by other
// means) call these same functions, so what they measure is what ships.
import type { Config } from "../../config/index.js";
import { COLOUR_PROFILE_VERSION, ImageDecodeError, loadEncoders } from "../../embeddings/index.js";
import type { Encoders } from "../../embeddings/index.js";
import type { Logger } from "../../logging/index.js";
import { afterBatchWork, ENCODER_INPUT_VERSION, ProcessingWorker, TextImageMapRefresher, undecodable } from "../../processing/index.js";
import type { AfterBatch, IndexSyncer, MapFitReport, ObjectStore, OnBatch, ProductEncoders } from "../../processing/index.js";
import { createImageFetcher } from "../../processing/fetch/index.js";
import type { MysqlConnection } from "../../storage/mysql/index.js";
import { MysqlProcessingQueue, MysqlTextImageMapStore } from "../../storage/mysql/index.js";

/** How long a failing product waits at most before its next attempt. */
const RETRY_CAP_MS = 5 * 60_000;

/** The image and text models, as config.processing chooses them. */
export function loadWorkerEncoders(config: Config, log: Logger): Promise<Encoders> {
  const { imageRuntime, imageModel } = config.processing;
  return loadEncoders({
    imageModel,
    cacheDir: config.cacheDir,
    log: (msg: string) => log.info({}, msg),
    // A fallback to the slower image runtime is worth a warning: it misses the embedding target.
    warn: (msg: string) => log.warn({}, msg),
    imageRuntime: imageRuntime === "auto" ? undefined : imageRuntime,
  });
}

/** The embeddings module behind the pipeline's own interface. */
export function productEncoders(encoders: Encoders): ProductEncoders {
  return {
    version: `${encoders.version}+${COLOUR_PROFILE_VERSION}+${ENCODER_INPUT_VERSION}`,
    // One decode for both: the colour profile reads the model's own input pixels.
    encodeImage: (image) =>
      encoders.image.encodeWithColour(image).catch((error: unknown) => {
        // The product's fault, not a fault of processing: no retry.
        throw error instanceof ImageDecodeError ? undecodable(error.cause ?? error) : error;
      }),
    encodeText: (text) => encoders.text.encode(text),
  };
}

/** One worker over the queue in MySQL, with config.processing's batch size, leases and retries. */
export function createProcessingWorker(
  config: Config,
  mysql: MysqlConnection,
  work: { objects: ObjectStore; encoders: ProductEncoders; owner: string; afterBatch?: AfterBatch; onBatch?: OnBatch },
  log: Logger,
): ProcessingWorker {
  const { processing } = config;
  const deps = {
    fetchImage: createImageFetcher({
      allowPrivateAddresses: processing.allowPrivateImageHosts,
      totalTimeoutMs: processing.imageFetchTimeoutMs,
      maxBytes: processing.imageMaxBytes,
    }),
    objects: work.objects,
    encoders: work.encoders,
  };
  const options = { ...processing, owner: work.owner, retryCapMs: RETRY_CAP_MS };
  return new ProcessingWorker(new MysqlProcessingQueue(mysql.db), deps, options, log, work.afterBatch, work.onBatch);
}

/**
 * The work after each batch (index sync, map refresh, sync of refitted catalogs: see
 * afterBatchWork) over MySQL and the given index: what the workers run, and what tests that
 * complete products by other means run too.
 */
export function createAfterBatch(
  config: Config,
  mysql: MysqlConnection,
  index: IndexSyncer,
  modelVersion: string,
  log: Logger,
  onFit?: (report: MapFitReport) => void,
): AfterBatch {
  return afterBatchWork(index, createMapRefresher(config, mysql, modelVersion, log, onFit), log);
}

/** The text-image maps of catalogs over MySQL, as the workers refresh them. */
export function createMapRefresher(
  config: Config,
  mysql: MysqlConnection,
  modelVersion: string,
  log: Logger,
  onFit?: (report: MapFitReport) => void,
): TextImageMapRefresher {
  return new TextImageMapRefresher(
    new MysqlTextImageMapStore(mysql.db, mysql.pool),
    modelVersion,
    { maxSamples: config.processing.textMapMaxSamples, ...(onFit ? { onFit } : {}) },
    log,
  );
}
