import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Config } from "../../config/index.js";
import type { Encoders } from "../../embeddings/index.js";
import type { Logger } from "../../logging/index.js";
import type { MapFitReport, ObjectStore, OnBatch, ProcessingWorker } from "../../processing/index.js";
import type { MysqlConnection } from "../../storage/mysql/index.js";
import { MysqlProcessingQueue } from "../../storage/mysql/index.js";
import type { RedisClient } from "../../storage/redis/index.js";
import { createAfterBatch, createProcessingWorker, loadWorkerEncoders, productEncoders } from "../shared/processing-wiring.js";
import { createSearchIndex } from "../shared/search-index.js";

/** The processing workers of one worker process. */
export interface Workers {
  /** Wakes the workers: new products were queued. */
  notify(): void;
  /** Resolves once the models are loaded and the workers run; rejects if the models fail to load. */
  ready: Promise<void>;
  /** Finishes the batches in flight, then stops. */
  stop(): Promise<void>;
}

export interface WorkerReports {
  onBatch?: OnBatch;
  onMapFit?: (report: MapFitReport) => void;
}

/**
 * Loads the models, re-queues products embedded by other models, then runs
 * `config.processing.workers` workers against the queue in MySQL. Any number of processes may
 * work the same queue at once.
 */
export function startWorkers(config: Config, mysql: MysqlConnection, redis: RedisClient, objects: ObjectStore, log: Logger, reports: WorkerReports = {}): Workers {
  const workers: ProcessingWorker[] = [];
  let stopped = false;
  let encoders: Encoders | undefined;

  const ready = (async () => {
    encoders = await loadWorkerEncoders(config, log);
    if (stopped) return;
    const pipelineEncoders = productEncoders(encoders);
    const { sync } = createSearchIndex(config, mysql, redis, encoders.text, log);
    const afterBatch = createAfterBatch(config, mysql, sync, pipelineEncoders.version, log, reports.onMapFit);
    const stale = await new MysqlProcessingQueue(mysql.db).requeueStale(pipelineEncoders.version);
    if (stale > 0) log.info({ products: stale, modelVersion: pipelineEncoders.version }, "models changed: products queued for re-embedding");
    const prefix = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    for (let i = 0; i < config.processing.workers; i++) {
      const work = { objects, encoders: pipelineEncoders, owner: `${prefix}:${i}`, afterBatch, ...(reports.onBatch ? { onBatch: reports.onBatch } : {}) };
      const worker = createProcessingWorker(config, mysql, work, log);
      workers.push(worker);
      worker.start();
    }
    log.info({ workers: config.processing.workers, modelVersion: pipelineEncoders.version }, "processing workers started");
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
