// Map fit benchmark: one catalog with N described products (embeddings shaped like the real
// ones: 1,280 sparse image features, an 11-colour histogram, a 100-d text vector) in a fresh
// MariaDB database, then the service's own map refresher (createMapRefresher, as the workers run
// it) fits and saves its map, in a process that has loaded the worker's models first, so that the
// RSS printed is a worker's. Prints the fit's wall and CPU time, max RSS and the stored size.
//
//   npm run bench:map-fit -- [--described 100000] [--mysql-url mysql://root@127.0.0.1:3306/]
import { randomBytes, randomUUID } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/index.js";
import { loadEncoders } from "../src/embeddings/index.js";
import { createLogger } from "../src/logging/index.js";
import { createMapRefresher } from "../src/server/processing.js";
import { openMysql } from "../src/storage/mysql/index.js";
import { catalogTextMaps, productEmbeddings, products } from "../src/storage/mysql/schema.js";
import { vectorToBytes } from "../src/storage/mysql/vectors.js";
import { seededRandom } from "../test/support/random.js";
import { eq } from "drizzle-orm";

const { values } = parseArgs({
  options: {
    described: { type: "string", default: "100000" },
    "mysql-url": { type: "string", default: process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/" },
  },
});
const n = Number(values.described);
const url = new URL(values["mysql-url"]);
url.pathname = `/vitrine_bench_map_${randomBytes(4).toString("hex")}`;
const config = loadConfig({ MYSQL_URL: url.toString(), TEXT_MAP_MAX_SAMPLES: process.env.TEXT_MAP_MAX_SAMPLES });
const mysql = await openMysql(config.mysqlUrl);
const catalogId = randomUUID();
const MODEL = "bench-map-fit";

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
        const image = new Float32Array(1280);
        for (let j = 0; j < 1280; j++) image[j] = random() < 0.6 ? 0 : Math.sqrt(random()) * 0.05;
        const colour = new Float32Array(11);
        colour[(start + k) % 11] = 1;
        const text = new Float32Array(100);
        for (let j = 0; j < 100; j++) text[j] = random() - 0.5;
        return { catalogId, productId: id, modelVersion: MODEL, imageSha256: "0".repeat(64), image: vectorToBytes(image), colour: vectorToBytes(colour), text: vectorToBytes(text), described: true, updatedAt: now };
      }),
    );
  }
  console.log(`inserted ${n} described products in ${((performance.now() - insertStart) / 1000).toFixed(1)} s`);

  const encoders = await loadEncoders({ cacheDir: process.env.CACHE_DIR ?? join(homedir(), ".cache", "vitrine") });
  const rssWithModels = process.memoryUsage().rss;
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
      `described products      ${n}`,
      `sample cap              ${config.processing.textMapMaxSamples}`,
      `fitted                  ${refitted.has(catalogId) ? "yes" : "NO"}; trained on ${row?.trainedOn}, stored ${((row?.bytes ?? 0) / 1e6).toFixed(2)} MB`,
      `fit (read, fit, save)   ${wallS.toFixed(1)} s wall, ${((used.user + used.system) / 1e6).toFixed(1)} s CPU`,
      `RSS with models loaded  ${(rssWithModels / 1e6).toFixed(0)} MB; max RSS of the process ${(process.resourceUsage().maxRSS / 1e3).toFixed(0)} MB`,
    ].join("\n"),
  );
  await encoders.close();
} finally {
  await mysql.db.execute(`DROP DATABASE \`${mysql.databaseName}\``);
  await mysql.close();
}
