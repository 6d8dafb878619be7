import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Config } from "../config/index.js";
import { COLOUR_PROFILE_VERSION, ImageDecodeError, loadEncoders } from "../embeddings/index.js";
import type { Encoders } from "../embeddings/index.js";
import type { Logger } from "../logging/index.js";
import { ENCODER_INPUT_VERSION, ProcessingWorker, refreshTextImageMaps, undecodable } from "../processing/index.js";
import type { ObjectStore, OnBatch, ProductEncoders } from "../processing/index.js";
import { createImageFetcher } from "../processing/fetch/index.js";
import type { MysqlConnection } from "../storage/mysql/index.js";
import { MysqlProcessingQueue, MysqlTextImageMapStore } from "../storage/mysql/index.js";
import type { Redis } from "ioredis";
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
 * Inside a worker process: loads the models, re-queues products embedded by other models, then
 * runs `config.processing.workers` workers against the queue in MySQL. Any number of processes
 * may work the same queue at once.
 */
export function startProcessing(
  config: Config,
  mysql: MysqlConnection,
  redis: Redis,
  objects: ObjectStore,
  log: Logger,
  onBatch?: OnBatch,
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
          const maps = new MysqlTextImageMapStore(mysql.db, mysql.pool);
          const { sync } = createSearchIndex(config, mysql, redis, encoders.text, log);
          const syncIndexes = async (catalogIds: Set<string>) => {
            for (const catalogId of catalogIds) {
              await sync.sync(catalogId).catch((error: unknown) => {
                log.warn({ err: error, catalogId }, "vector index not updated now; the service's sweeper will retry");
              });
            }
          };
          const afterBatch = async (catalogIds: Set<string>) => {
            // Processed products become searchable at once, before a map fit that may take seconds;
            // a refitted map then rebuilds the catalog's index.
            await syncIndexes(catalogIds);
            await refreshTextImageMaps(catalogIds, maps, pipelineEncoders.version, log);
            await syncIndexes(catalogIds);
          };
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
