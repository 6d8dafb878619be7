// Map fit benchmark: one catalog with N described products (embeddings shaped like the real
// ones: sparse image features of the image model's size, 1,280 or with --image-model
// mobilenet+inception 3,328; an 11-colour histogram, a 100-d text vector) in a fresh
// MariaDB database, then the service's own map refresher (createMapRefresher, as the workers run
// it) fits and saves its map, in a process that has loaded the worker's models first, so that the
// RSS printed is a worker's. Prints the fit's wall and CPU time, max RSS and the stored size.
// Then what every refit is followed by: the service's index sync (createSearchIndex) rebuilds the
// catalog's vector index with the new map into a Redis 8 started for the run, and the rebuild's
// wall time, this process's CPU and Redis's CPU are printed per product, beside the cost of the
// projection alone.
//
//   npm run bench:map-fit -- [--described 100000] [--mysql-url mysql://root@127.0.0.1:3306/] [--no-rebuild]
//                            [--image-model mobilenet | mobilenet+inception]
import { randomBytes, randomUUID } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/index.js";
import { createLogger } from "../src/logging/index.js";
import { createMapRefresher, loadWorkerEncoders } from "../src/apps/shared/processing-wiring.js";
import { openMysql } from "../src/storage/mysql/index.js";
import { catalogTextMaps, productEmbeddings, products } from "../src/storage/mysql/schema.js";
import { vectorToBytes } from "../src/storage/index.js";
import { seededRandom } from "../test/support/random.js";
import { eq } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { SentenceEncoder } from "../src/embeddings/index.js";
import type { Logger } from "../src/logging/index.js";
import { provisionRedis8 } from "../src/provisioning/index.js";
import { createSearchIndex } from "../src/apps/shared/search-index.js";
import { MysqlIndexSource } from "../src/storage/mysql/index.js";
import { catalogs } from "../src/storage/mysql/schema.js";
import { openRedis } from "../src/storage/redis/index.js";
import { freePort } from "../test/support/free-port.js";

const { values } = parseArgs({
  options: {
    described: { type: "string", default: "100000" },
    "mysql-url": { type: "string", default: process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/" },
    "no-rebuild": { type: "boolean", default: false },
    "image-model": { type: "string", default: "mobilenet" },
  },
});
const n = Number(values.described);
const url = new URL(values["mysql-url"]);
url.pathname = `/vitrine_bench_map_${randomBytes(4).toString("hex")}`;
const config = loadConfig({ MYSQL_URL: url.toString(), TEXT_MAP_MAX_SAMPLES: process.env.TEXT_MAP_MAX_SAMPLES, IMAGE_MODEL: values["image-model"], CACHE_DIR: process.env.CACHE_DIR });
const mysql = await openMysql(config.mysqlUrl);
const catalogId = randomUUID();
const MODEL = "bench-map-fit";

// The worker's models, as its process holds them while it fits.
const encoders = await loadWorkerEncoders(config, createLogger({ level: "warn" }));
const rssWithModels = process.memoryUsage().rss;
const imageDims = encoders.image.dimensions;

try {
  const random = seededRandom(1);
  const insertStart = performance.now();
  const now = new Date();
  for (let start = 0; start < n; start += 200) {
    const ids = Array.from({ length: Math.min(200, n - start) }, (_, k) => `p${start + k}`);
    await mysql.db.insert(products).values(
      ids.map((id) => ({ catalogId, id, imageUrl: `https://images.example/${id}.jpg`, descriptor: id, metadata: {}, status: "PROCESSED" as const, createdAt: now, updatedAt: now })),
    );
    await mysql.db.insert(productEmbeddings).values(
      ids.map((id, k) => {
        const image = new Float32Array(imageDims);
        for (let j = 0; j < imageDims; j++) image[j] = random() < 0.6 ? 0 : Math.sqrt(random()) * 0.05;
        const colour = new Float32Array(11);
        colour[(start + k) % 11] = 1;
        const text = new Float32Array(100);
        for (let j = 0; j < 100; j++) text[j] = random() - 0.5;
        return { catalogId, productId: id, modelVersion: MODEL, imageSha256: "0".repeat(64), image: vectorToBytes(image), colour: vectorToBytes(colour), text: vectorToBytes(text), described: true, updatedAt: now };
      }),
    );
  }
  console.log(`inserted ${n} described products in ${((performance.now() - insertStart) / 1000).toFixed(1)} s`);

  const log = createLogger({ level: "info" });
  const refresher = createMapRefresher(config, mysql, MODEL, log);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const refitted = await refresher.refresh([catalogId]);
  const wallS = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const [row] = await mysql.db.select().from(catalogTextMaps).where(eq(catalogTextMaps.catalogId, catalogId));
  console.log(
    [
      `described products      ${n} (${imageDims}-d image features, IMAGE_MODEL ${config.processing.imageModel})`,
      `sample cap              ${config.processing.textMapMaxSamples}`,
      `fitted                  ${refitted.has(catalogId) ? "yes" : "NO"}; trained on ${row?.trainedOn}, stored ${((row?.bytes ?? 0) / 1e6).toFixed(2)} MB`,
      `fit (read, fit, save)   ${wallS.toFixed(1)} s wall, ${((used.user + used.system) / 1e6).toFixed(1)} s CPU`,
      `RSS with models loaded  ${(rssWithModels / 1e6).toFixed(0)} MB; max RSS of the process ${(process.resourceUsage().maxRSS / 1e3).toFixed(0)} MB`,
    ].join("\n"),
  );
  if (!values["no-rebuild"]) await measureRebuild(encoders.text, log);
} finally {
  await encoders.close();
  await mysql.db.execute(`DROP DATABASE \`${mysql.databaseName}\``);
  await mysql.close();
}

/** The rebuild every refit is followed by, as the workers run it (createSearchIndex's sync). */
async function measureRebuild(text: SentenceEncoder, log: Logger): Promise<void> {
  const now = new Date();
  await mysql.db.insert(catalogs).values({ id: catalogId, organizationId: randomUUID(), name: "bench", description: "", createdAt: now, updatedAt: now });
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-bench-map-redis-"));
  const server = await provisionRedis8({ cacheDir: config.cacheDir, port: await freePort(), dataDir, log: () => {} });
  const redis = await openRedis({ url: server.url });
  try {
    const { sync, spaces } = createSearchIndex(config, mysql, redis, text, log);
    const source = new MysqlIndexSource(mysql.db, mysql.pool);
    const catalog = await source.catalog(catalogId);
    const space = await spaces.forMap(catalog?.map);
    const sample = await source.indexablePage(catalogId, undefined, 2000);
    const projectStarted = performance.now();
    for (const p of sample) space.project(p.embeddings.image, p.embeddings.colour);
    const projectMs = (performance.now() - projectStarted) / sample.length;

    const redisCpu = async () => {
      const info = await redis.info("cpu");
      return ["used_cpu_user", "used_cpu_sys"].reduce((s, k) => s + Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0), 0);
    };
    const redisBefore = await redisCpu();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const result = await sync.sync(catalogId, { rebuild: true, waitMs: 0 });
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const redisS = (await redisCpu()) - redisBefore;
    const built = result?.rebuilt ?? 0;
    const per = (ms: number) => `${(ms / Math.max(1, built)).toFixed(3)} ms/product`;
    console.log(
      [
        `index rebuild           ${built} products in ${(wallMs / 1000).toFixed(1)} s wall (${per(wallMs)})`,
        `  this process's CPU    ${((used.user + used.system) / 1e6).toFixed(1)} s (${per((used.user + used.system) / 1e3)}); projection alone ${projectMs.toFixed(3)} ms/product`,
        `  Redis's CPU           ${redisS.toFixed(1)} s (${per(redisS * 1000)})`,
      ].join("\n"),
    );
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
