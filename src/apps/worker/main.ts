// `npm run worker`, and each worker process the service forks: processing workers without the API.
// Run several to process faster; they share the queue in MySQL with the service's own.
import { join } from "node:path";
import { workerConfig } from "../../config/index.js";
import { createLogger } from "../../logging/index.js";
import { LocalObjectStore } from "../../storage/objects/index.js";
import { resolveMysqlUrl } from "../shared/mysql-url.js";
import { resolveObjectUrlSecret } from "../shared/object-url-secret.js";
import { exitOnStartFailure, stopOnSignals } from "../shared/process-lifecycle.js";
import { resolveRedisUrl } from "../shared/redis-url.js";
import { openMysqlAtStart, openRedisAtStart } from "../shared/stores.js";
import { reportToService } from "../shared/worker-messages.js";
import type { WorkerMessage } from "../shared/worker-messages.js";
import { startWorkers } from "./workers.js";

async function main(): Promise<void> {
  const { config, forked } = workerConfig();
  const log = createLogger({ level: config.logLevel });
  // A forked worker's MySQL and Redis were resolved by its service (mysqlUrlSet, redis.url).
  const mysql = await openMysqlAtStart((await resolveMysqlUrl(config, log)).url, config.startupWaitMs, log);
  const redis = await openRedisAtStart({ ...config.redis, url: (await resolveRedisUrl(config, log)).url }, config.startupWaitMs, log);
  const objects = new LocalObjectStore(
    join(config.dataDir, "objects"),
    () => config.publicUrl ?? `http://localhost:${config.port}`,
    resolveObjectUrlSecret(config.dataDir, log),
  );
  // This process exists to work: at least one worker, whatever WORKERS says for the service.
  const workers = startWorkers({ ...config, processing: { ...config.processing, workers: Math.max(1, config.processing.workers) } }, mysql, redis, objects, log, {
    // Forked by the service: each batch's and each fit's report go to it, for its metrics.
    ...(forked ? { onBatch: (report) => reportToService({ kind: "batch", report }), onMapFit: (report) => reportToService({ kind: "map-fit", report }) } : {}),
  });
  await workers.ready;
  process.on("message", (message: WorkerMessage) => message === "wake" && workers.notify());
  reportToService("ready");

  stopOnSignals(
    async () => {
      await workers.stop();
      // With no offline queue, QUIT fails at once while Redis is away: then just drop the socket.
      await redis.quit().catch(() => redis.disconnect());
      await mysql.close();
    },
    log,
    "worker stopping: finishing the batch in flight",
    // Forked workers go when their service goes, even if it could not say so.
    { whenParentExits: forked },
  );
}

main().catch(exitOnStartFailure);
