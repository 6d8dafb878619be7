import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Config } from "../config/index.js";
import { COLOUR_PROFILE_VERSION, ImageDecodeError, loadEncoders } from "../embeddings/index.js";
import type { Encoders } from "../embeddings/index.js";
import type { Logger } from "../logging/index.js";
import { afterBatchWork, ENCODER_INPUT_VERSION, ProcessingWorker, TextImageMapRefresher, undecodable } from "../processing/index.js";
import type { AfterBatch, IndexSyncer, MapFitReport, ObjectStore, OnBatch, ProductEncoders } from "../processing/index.js";
import { createImageFetcher } from "../processing/fetch/index.js";
import type { MysqlConnection } from "../storage/mysql/index.js";
import { MysqlProcessingQueue, MysqlTextImageMapStore } from "../storage/mysql/index.js";
import type { RedisClient } from "../storage/redis/index.js";
import { createSearchIndex } from "./search-index.js";

export interface Processing {
  /** Wakes the workers: new products were queued. */
  notify(): void;
  /** Resolves once the models are loaded and the workers run (immediately with no workers); rejects if the models fail to load. */
  ready: Promise<void>;
  /** Finishes the batches in flight, then stops. */
  stop(): Promise<void>;
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

/**
 * The work after each batch (index sync, map refresh, sync of refitted catalogs: see
 * afterBatchWork) over MySQL and the given index: what the workers run, and what tests and
 * benchmarks that complete products by other means run too.
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

/**
 * Inside a worker process: loads the models, re-queues products embedded by other models, then
 * runs `config.processing.workers` workers against the queue in MySQL. Any number of processes
 * may work the same queue at once.
 */
export function startProcessing(
  config: Config,
  mysql: MysqlConnection,
  redis: RedisClient,
  objects: ObjectStore,
  log: Logger,
  onBatch?: OnBatch,
  onMapFit?: (report: MapFitReport) => void,
): Processing {
  const workers: ProcessingWorker[] = [];
  let stopped = false;
  let encoders: Encoders | undefined;
  const { processing } = config;

  const ready =
    processing.workers === 0
      ? Promise.resolve()
      : (async () => {
          encoders = await loadEncoders({
            cacheDir: config.cacheDir,
            log: (msg: string) => log.info({}, msg),
            // A fallback to the slower image runtime is worth a warning: it misses the embedding target.
            warn: (msg: string) => log.warn({}, msg),
            imageRuntime: processing.imageRuntime === "auto" ? undefined : processing.imageRuntime,
          });
          if (stopped) return;
          const pipelineEncoders = productEncoders(encoders);
          const { sync } = createSearchIndex(config, mysql, redis, encoders.text, log);
          const afterBatch = createAfterBatch(config, mysql, sync, pipelineEncoders.version, log, onMapFit);
          const deps = {
            fetchImage: createImageFetcher({
              allowPrivateAddresses: processing.allowPrivateImageHosts,
              totalTimeoutMs: processing.imageFetchTimeoutMs,
              maxBytes: processing.imageMaxBytes,
            }),
            objects,
            encoders: pipelineEncoders,
          };
          const queue = new MysqlProcessingQueue(mysql.db);
          const stale = await queue.requeueStale(pipelineEncoders.version);
          if (stale > 0) log.info({ products: stale, modelVersion: pipelineEncoders.version }, "models changed: products queued for re-embedding");
          const prefix = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
          for (let i = 0; i < processing.workers; i++) {
            const options = { ...processing, owner: `${prefix}:${i}`, retryCapMs: 5 * 60_000 };
            const worker = new ProcessingWorker(queue, deps, options, log, afterBatch, onBatch);
            workers.push(worker);
            worker.start();
          }
          log.info({ workers: processing.workers, modelVersion: pipelineEncoders.version }, "processing workers started");
        })();
  // Logged here; the process then exits and its supervisor (the service, or the operator's)
  // starts it again.
  ready.catch((error: unknown) => log.error({ err: error }, "processing could not start: models failed to load"));

  return {
    notify: () => workers.forEach((w) => w.notify()),
    ready,
    async stop() {
      stopped = true;
      await Promise.all(workers.map((w) => w.stop()));
      await encoders?.close();
    },
  };
}
