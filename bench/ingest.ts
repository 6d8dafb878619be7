// Ingest benchmark: real queue (MariaDB), worker, fetcher (loopback HTTP), sharp, encoders.
// Prints images/s per core, ms per image by phase, and peak RSS. Not a test: numbers, not verdicts.
// One product at a time (concurrency 1), so each phase's time is its own and not time spent
// queueing for the single-threaded encoder.
//
//   npm run bench:ingest -- [--images 300] [--photos ../shared/eval/fashion-dev/images]
//   IMAGE_RUNTIME=tfjs npm run bench:ingest -- ...   (the image runtime, as the service reads it)
import { randomBytes, randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/index.js";
import { createProcessingWorker, loadWorkerEncoders, productEncoders } from "../src/apps/shared/processing-wiring.js";
import { MysqlCatalogRepository, MysqlProductRepository, openMysql } from "../src/storage/mysql/index.js";
import { LocalObjectStore } from "../src/storage/objects/index.js";

const { values } = parseArgs({
  options: {
    images: { type: "string", default: "300" },
    photos: { type: "string", default: join(import.meta.dirname, "..", "..", "shared", "eval", "fashion-dev", "images") },
    "mysql-url": { type: "string", default: process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/vitrine" },
  },
});
const count = Number(values.images);
const files = readdirSync(values.photos).filter((f) => /\.(jpe?g|png)$/i.test(f)).slice(0, count);
if (files.length === 0) throw new Error(`no photos in ${values.photos}`);

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const rssAtStart = process.memoryUsage().rss;

// Photos are read from where they are and served over loopback HTTP, as an image host would.
const server = createServer((req, res) => {
  const name = decodeURIComponent((req.url ?? "").slice(1));
  if (!files.includes(name)) return void res.writeHead(404).end();
  const bytes = readFileSync(join(values.photos, name));
  res.writeHead(200, { "content-type": "image/jpeg", "content-length": bytes.length }).end(bytes);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const database = `vitrine_bench_${randomBytes(4).toString("hex")}`;
const url = new URL(values["mysql-url"]);
url.pathname = `/${database}`;
const connection = await openMysql(url.toString());
const loadStart = performance.now();
// The service's configuration from the bench's environment (IMAGE_RUNTIME, CACHE_DIR, ...), with
// one product at a time and the loopback photo host allowed.
const config = loadConfig({
  ...process.env,
  MYSQL_URL: url.toString(),
  IMAGE_FETCH_ALLOW_PRIVATE: "true",
  PROCESSING_BATCH_SIZE: "16",
  PROCESSING_CONCURRENCY: "1",
  PROCESSING_RETRY_BASE_MS: "1000",
  PROCESSING_MAX_ATTEMPTS: "3",
  PROCESSING_IDLE_POLL_MS: "100",
});
const { imageRuntime } = config.processing;
const benchLog = { info() {}, warn: (_o: object, m: string) => console.warn(m), error: (o: object, m: string) => console.error(m, o) };
const encoders = await loadWorkerEncoders(config, benchLog);
const loadMs = performance.now() - loadStart;
const rssLoaded = process.memoryUsage().rss;

try {
  const organizationId = randomUUID();
  const catalogId = randomUUID();
  const now = new Date();
  await new MysqlCatalogRepository(connection.db).create({ id: catalogId, organizationId, name: "bench", description: "", createdAt: now, updatedAt: now });
  await new MysqlProductRepository(connection.db).upsertBatch(
    catalogId,
    files.map((file, i) => ({ id: `p${i}`, imageUrl: `${base}/${encodeURIComponent(file)}`, descriptor: file, metadata: {} })),
    now,
  );

  const pipelineEncoders = productEncoders(encoders);
  const objects = new LocalObjectStore(join(tmpdir(), database), () => "http://localhost", randomBytes(32));
  const worker = createProcessingWorker(config, connection, { objects, encoders: pipelineEncoders, owner: "bench" }, benchLog);
  const totals = { download: 0, decode: 0, embed: 0, store: 0 };
  let processed = 0;
  let failed = 0;
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  for (;;) {
    const report = await worker.runOnce();
    if (report.claimed === 0) break;
    processed += report.processed;
    failed += report.failed + report.retried;
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += report.timings[k];
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStart);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const perImage = (ms: number) => (ms / processed).toFixed(1);

  console.log(`\ningest benchmark: ${processed} images processed, ${failed} not, model ${pipelineEncoders.version}`);
  console.log(`  model load                 ${loadMs.toFixed(0)} ms (IMAGE_RUNTIME=${imageRuntime})`);
  console.log(`  throughput                 ${((processed / wallMs) * 1000).toFixed(1)} images/s wall, one worker process`);
  console.log(`  CPU per image              ${perImage(cpuMs)} ms  ->  ${((processed / cpuMs) * 1000).toFixed(1)} images/s per core`);
  console.log(`  per image, by phase (ms)   download ${perImage(totals.download)}  decode ${perImage(totals.decode)}  embed ${perImage(totals.embed)}  store ${perImage(totals.store)}`);
  console.log(`  RSS                        start ${mb(rssAtStart)}, models loaded ${mb(rssLoaded)}, peak ${mb(peakRss)}`);
} finally {
  clearInterval(sampler);
  await encoders.close();
  await connection.pool.query(`DROP DATABASE \`${database}\``);
  await connection.close();
  server.close();
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`;
}
