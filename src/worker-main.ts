import { createLogger } from "./logging/index.js";
import { join } from "node:path";
import { ConfigError, loadConfig } from "./config/index.js";
import type { Config } from "./config/index.js";
import type { BatchReport, MapFitReport } from "./processing/index.js";
import { startProcessing } from "./server/processing.js";
import { WORKER_CONFIG_ENV } from "./server/worker-processes.js";
import type { WorkerBatchMessage, WorkerMapFitMessage, WorkerMessage } from "./server/worker-processes.js";
import { LocalObjectStore } from "./storage/objects/index.js";
import { openMysqlAtStart, openRedisAtStart } from "./server/stores.js";
import { StartupError } from "./server/startup-wait.js";
import { resolveObjectUrlSecret } from "./server/object-url-secret.js";
import { resolveMysqlUrl } from "./server/mysql-url.js";
import { resolveRedisUrl } from "./server/redis-url.js";

/**
 * A processing worker on its own, without the API: run several to process faster. They share
 * the queue in MySQL with the service's own workers.
 */
async function main(): Promise<void> {
  // Forked by the service: its validated configuration, verbatim. Run by hand: the environment.
  const forwarded = process.env[WORKER_CONFIG_ENV];
  const config: Config = forwarded ? (JSON.parse(forwarded) as Config) : loadConfig(process.env);
  const log = createLogger({ level: config.logLevel });
  // A forked worker's MYSQL_URL was resolved by its service.
  const mysqlUrl = (await resolveMysqlUrl(config, log, Boolean(forwarded) || Boolean(process.env.MYSQL_URL))).url;
  const mysql = await openMysqlAtStart(mysqlUrl, config.startupWaitMs, log);
  const redis = await openRedisAtStart({ ...config.redis, url: (await resolveRedisUrl(config, log)).url }, config.startupWaitMs, log);
  const objects = new LocalObjectStore(
    join(config.dataDir, "objects"),
    () => config.publicUrl ?? `http://localhost:${config.port}`,
    resolveObjectUrlSecret(config.dataDir, log),
  );
  // This process exists to work: at least one worker, whatever WORKERS says for the service.
  const workers = Math.max(1, config.processing.workers);
  // Forked by the service: each batch's outcome and embedding times go to it, for its metrics.
  const onBatch = process.send
    ? ({ processed, retried, failed, embedMs }: BatchReport) => {
        // Metrics only: a message lost to a closing channel is not worth an error.
        if (process.connected) process.send?.({ kind: "batch", processed, retried, failed, embedMs } satisfies WorkerBatchMessage, undefined, {}, () => undefined);
      }
    : undefined;
  const onMapFit = process.send
    ? ({ outcome, seconds }: MapFitReport) => {
        if (process.connected) process.send?.({ kind: "map-fit", outcome, seconds } satisfies WorkerMapFitMessage, undefined, {}, () => undefined);
      }
    : undefined;
  const processing = startProcessing({ ...config, processing: { ...config.processing, workers } }, mysql, redis, objects, log, onBatch, onMapFit);
  await processing.ready;
  process.on("message", (message: WorkerMessage) => message === "wake" && processing.notify());
  process.send?.("ready" satisfies WorkerMessage);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info({ signal }, "worker stopping: finishing the batch in flight");
    processing
      .stop()
      .then(() => redis.quit().catch(() => redis.disconnect()))
      .then(() => mysql.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, "worker shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Forked workers go when their service goes, even if it could not say so.
  process.on("disconnect", () => stop("parent exited"));
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError || error instanceof StartupError ? error.message : error);
  process.exit(1);
});
