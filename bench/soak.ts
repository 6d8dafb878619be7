// Soak benchmark: the real service, as `npm start` runs it, importing N full-size product photos
// over REST until every product is searchable, then search and recommendation latency at that
// size. Prints figures, not verdicts. Loopback only; stops what it started (service, its workers,
// Redis) and drops its database unless --keep.
//
//   npm run bench:soak -- --n 2000            (photos are generated once into CACHE_DIR/soak-photos)
//   npm run bench:soak -- --n 100000 --database vitrine_soak
//
// The service gets the environment the bench runs in (so WORKERS=1 npm run bench:soak ... tries
// another configuration), plus its own PORT, GRPC_PORT, DATA_DIR, MYSQL_URL (a fresh database),
// REDIS_URL (a Redis 8 provisioned for the run), ADMIN_API_KEY and IMAGE_FETCH_ALLOW_PRIVATE=true
// (the photos are served from loopback).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createNetServer } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import { loadConfig } from "../src/config/index.js";
import { provisionRedis8 } from "../src/provisioning/index.js";
import { ensurePhotos, photoPath, readSourceItems } from "./soak/photos.js";
import { findProcess, ProcSampler } from "./soak/proc-sampler.js";
import { ServiceLog } from "./soak/service-log.js";
import { kb, latencySummary, mb, sleep } from "./soak/stats.js";
import { API_KEY_HEADER } from "../src/rpc/headers.js";

const repo = join(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    n: { type: "string", default: "2000" },
    batch: { type: "string", default: "1000" },
    dataset: { type: "string", default: join(repo, "..", "shared", "eval", "fashion-dev") },
    "photo-cache": { type: "string" },
    "mysql-url": { type: "string", default: "mysql://root@127.0.0.1:3306" },
    database: { type: "string" },
    port: { type: "string" },
    "grpc-port": { type: "string" },
    "redis-port": { type: "string" },
    queries: { type: "string", default: "400" },
    titles: { type: "string", default: "half" },
    "during-qps": { type: "string", default: "20" },
    "timeout-s": { type: "string" },
    "service-dir": { type: "string" },
    "skip-build": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(
    "usage: npm run bench:soak -- [--n 2000] [--batch 1000] [--queries 400] [--during-qps 20] [--titles half|none|all] [--database NAME] [--port P] [--grpc-port P] [--redis-port P]\n" +
      "       [--photo-cache DIR] [--dataset DIR] [--service-dir CHECKOUT] [--mysql-url mysql://root@127.0.0.1:3306] [--timeout-s S] [--skip-build] [--keep]",
  );
  process.exit(0);
}
// Another checkout's service (e.g. the previous commit's) against the same photos: before/after.
const serviceDir = values["service-dir"] ?? repo;
const n = Number(values.n);
// "none" leaves the text-image map out of the picture, to see the pipeline's own throughput.
const titles = values.titles;
if (titles !== "half" && titles !== "none" && titles !== "all") throw new Error("--titles: half, none or all");
const batchSize = Number(values.batch);
const queriesPerCase = Number(values.queries);
const duringQps = Number(values["during-qps"]);
// Slower than 10 images/s is a failure worth stopping for.
const timeoutMs = Number(values["timeout-s"] ?? n / 10 + 600) * 1000;
if (!Number.isInteger(n) || n < 1 || !Number.isInteger(batchSize) || batchSize < 1) throw new Error("--n and --batch must be positive integers");

const cacheDir = loadConfig(process.env).cacheDir;
const photoCache = values["photo-cache"] ?? join(cacheDir, "soak-photos");
const database = values.database ?? `vitrine_soak_${randomBytes(4).toString("hex")}`;
if (!/^[A-Za-z0-9_]+$/.test(database)) throw new Error("--database: letters, digits and _ only");
const PHOTO_DESCRIPTION = "900x1200 JPEG q90";
const log = (line: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}`);

// ---- photos ----
const items = await readSourceItems(values.dataset);
let t = performance.now();
log(`photos: ensuring ${n} in ${photoCache}`);
const made = await ensurePhotos(photoCache, items, n, (done, madeSoFar) => {
  if (done % 10_000 === 0 || madeSoFar > 0) log(`  ${done}/${n} (${madeSoFar} generated)`);
});
log(`photos: ${made} generated, ${n - made} reused, ${((performance.now() - t) / 1000).toFixed(1)} s`);
const samplePhotoBytes = await sampleSize(n);

if (!values["skip-build"]) {
  log("building (npm run build)");
  const built = spawnSync("npm", ["run", "--silent", "build"], { cwd: serviceDir, stdio: "inherit" });
  if (built.status !== 0) throw new Error("npm run build failed");
}

// ---- what the run needs, all on loopback ----
const work = await mkdtemp(join(tmpdir(), "vitrine-soak-"));
const cleanups: (() => Promise<unknown>)[] = [];
const cleanup = async () => {
  // Taken out first: an interrupt during the run's own cleanup must not run a step twice.
  for (const step of cleanups.splice(0).reverse()) await step().catch((error: unknown) => console.error("cleanup:", error));
};
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));

try {
  const photoServer = createServer((req, res) => {
    const match = /^\/p\/(\d+)\.jpg$/.exec(req.url ?? "");
    const index = match ? Number(match[1]) : -1;
    if (index < 0 || index >= n) return void res.writeHead(404).end();
    const path = photoPath(photoCache, index);
    stat(path).then(
      (s) => {
        res.writeHead(200, { "content-type": "image/jpeg", "content-length": s.size });
        createReadStream(path).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => photoServer.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => photoServer.close(resolve)));
  const photoBase = `http://127.0.0.1:${(photoServer.address() as AddressInfo).port}/p`;

  const server = mysql.createPool({ uri: values["mysql-url"], connectionLimit: 2 });
  cleanups.push(() => server.end());
  await server.query(`DROP DATABASE IF EXISTS \`${database}\``);
  if (!values.keep) cleanups.push(() => server.query(`DROP DATABASE IF EXISTS \`${database}\``));
  const mysqlUrl = new URL(values["mysql-url"]);
  mysqlUrl.pathname = `/${database}`;

  const redisPort = values["redis-port"] ? Number(values["redis-port"]) : await freePort();
  const redis8 = await provisionRedis8({ port: redisPort, cacheDir, dataDir: join(work, "redis"), log: (l) => log(`redis: ${l}`) });
  cleanups.push(() => redis8.stop());
  if (!redis8.startedByUs) log(`warning: Redis on port ${redisPort} was already running; its memory figures include other data`);
  const redis = new Redis(redis8.url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  cleanups.push(() => redis.quit());
  const redisBaseline = await usedMemory(redis);

  // ---- the service, as `npm start` runs it ----
  const port = values.port ? Number(values.port) : await freePort();
  const grpcPort = values["grpc-port"] ? Number(values["grpc-port"]) : await freePort();
  const adminKey = randomBytes(24).toString("hex");
  const dataDir = join(work, "data");
  await mkdir(dataDir, { recursive: true });
  const env = {
    ...process.env,
    PORT: String(port),
    GRPC_PORT: String(grpcPort),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    MYSQL_URL: mysqlUrl.toString(),
    REDIS_URL: redis8.url,
    ADMIN_API_KEY: adminKey,
    IMAGE_FETCH_ALLOW_PRIVATE: "true",
  };
  const serviceStarted = performance.now();
  // The entry moved under src/apps/ (issue 15); an older checkout given by --service-dir has src/main.js.
  const entry = ["apps/api/main.js", "main.js"].map((file) => join(serviceDir, "dist", "src", file)).find((file) => existsSync(file));
  if (!entry) throw new Error(`no built service in ${serviceDir} (run npm run build there)`);
  const service = spawn(process.execPath, [entry], { cwd: serviceDir, env, stdio: ["ignore", "pipe", "pipe"] });
  const serviceExited = new Promise<void>((resolve) => service.once("exit", () => resolve()));
  const workerPids = new Set<number>();
  cleanups.push(async () => {
    if (service.exitCode === null && service.signalCode === null) {
      service.kill("SIGTERM");
      const killer = setTimeout(() => service.kill("SIGKILL"), 30_000);
      await serviceExited;
      clearTimeout(killer);
    }
    // A worker that outlived its service (stuck in shutdown) must not outlive the bench.
    await sleep(2000);
    for (const pid of workerPids) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").match(/apps\/worker\/main|worker-main/)) continue;
        process.kill(pid, "SIGKILL");
        log(`killed worker process ${pid}, still running after its service exited`);
      } catch {
        // already gone
      }
    }
  });
  const serviceLog = new ServiceLog(join(work, "service.log"), [service.stdout!, service.stderr!]);
  cleanups.push(() => serviceLog.close());
  const base = `http://127.0.0.1:${port}`;
  const workersReady = await waitReady(base, service, 300_000);
  log(`service up in ${((performance.now() - serviceStarted) / 1000).toFixed(1)} s (pid ${service.pid}, ${workersReady} worker processes ready); log ${join(work, "service.log")}`);

  const sampler = new ProcSampler(
    [
      { pid: service.pid!, label: "API" },
      { pid: process.pid, label: "bench itself" },
      ...optional((await serverPid(server)) ?? findProcess(["mariadbd"]) ?? findProcess(["mysqld"]), "MariaDB (shared)"),
      ...optional(findProcess([`--port ${redisPort}`]), "Redis"),
    ],
    service.pid,
  );
  sampler.start();
  const rememberWorkers = setInterval(() => {
    for (const s of sampler.stats.values()) if (s.label.startsWith("worker")) workerPids.add(s.pid);
  }, 1000);
  cleanups.push(async () => clearInterval(rememberWorkers));
  cleanups.push(async () => sampler.stop());

  const admin = client(base, adminKey);
  const organizationId = randomUUID();
  const keyResponse = await admin("POST", `/organizations/${organizationId}/keys`, { name: "soak", scopes: ["read", "write", "search"] });
  const api = client(base, (keyResponse as { key: string }).key);
  const catalog = (await api("POST", `/organizations/${organizationId}/catalogs`, { name: "soak", description: `soak benchmark, ${n} products` })) as { id: string };
  const catalogId = catalog.id;
  const catalogPath = `/organizations/${organizationId}/catalogs/${catalogId}`;

  const searchBody = (i: number, filtered: boolean) => {
    const item = items[i % items.length]!;
    return {
      organizationId,
      catalogId,
      query: `${item.baseColour} ${item.articleType}`.toLowerCase(),
      topK: 10,
      visual_weight: 0.5,
      similarity_threshold: 0,
      ...(filtered ? { filters: [{ field: "gender", operator: "eq", value: "Men" }] } : {}),
    };
  };

  // ---- searches while importing: one client, paced under the default rate limit ----
  const during: number[] = [];
  let duringFailures = 0;
  let importing = true;
  const duringLoop = (async () => {
    let i = 0;
    while (importing && duringQps > 0) {
      const started = performance.now();
      try {
        await api("POST", "/search", searchBody(i++, false));
        during.push(performance.now() - started);
      } catch {
        duringFailures++;
      }
      await sleep(Math.max(0, 1000 / duringQps - (performance.now() - started)));
    }
  })();

  // ---- import ----
  const cpuAtStart = sampler.cpuNow();
  const importStarted = performance.now();
  const createMs: number[] = [];
  for (let from = 0; from < n; from += batchSize) {
    const products = [];
    for (let i = from; i < Math.min(n, from + batchSize); i++) {
      const item = items[i % items.length]!;
      products.push({
        id: `p${i}`,
        catalogId,
        imageUrl: `${photoBase}/${i}.jpg`,
        // Titles on half the products; the other half rely on their photos (the text-image map).
        descriptor: titles === "all" || (titles === "half" && i % 2 === 0) ? item.title : "",
        metadata: { gender: item.gender, price: 10 + (i % 90) },
      });
    }
    const started = performance.now();
    await api("POST", `${catalogPath}/products`, products);
    createMs.push(performance.now() - started);
  }
  const createdAt = performance.now();
  log(`created ${n} products in ${createMs.length} calls, ${((createdAt - importStarted) / 1000).toFixed(1)} s`);

  // ---- wait until every product is processed, then searchable ----
  const vectorKey = `${loadConfig(env).redis.keyPrefix}{${catalogId}}:vectors`;
  const deciles: { done: number; at: number; rss: string }[] = [];
  let processedAt = 0;
  let searchableAt = 0;
  let last = { processed: 0, error: 0 };
  let cpuAtProcessed = cpuAtStart;
  while (performance.now() - importStarted < timeoutMs) {
    const progress = (await api("GET", `${catalogPath}/progress`)) as { status: string; processing: number; processed: number; error: number };
    last = { processed: progress.processed ?? 0, error: progress.error ?? 0 };
    const done = last.processed + last.error;
    while (deciles.length < 10 && done >= ((deciles.length + 1) * n) / 10) {
      deciles.push({ done: Math.ceil(((deciles.length + 1) * n) / 10), at: performance.now(), rss: rssLine(sampler) });
      log(`  ${deciles.length * 10}% done (${done}) at ${((performance.now() - importStarted) / 1000).toFixed(1)} s; ${rssLine(sampler)}`);
    }
    if (!processedAt && progress.status !== "PROCESSING" && done === n) {
      processedAt = performance.now();
      cpuAtProcessed = sampler.cpuNow();
    }
    if (processedAt) {
      const indexed = Number(await redis.call("VCARD", vectorKey).catch(() => 0));
      if (indexed >= last.processed) {
        searchableAt = performance.now();
        break;
      }
    }
    await sleep(processedAt ? 100 : 500);
  }
  importing = false;
  await duringLoop;
  // The same searches as the API timed them (its request log): the client's figure minus the
  // loopback hop and this process's own event loop, which also serves the photos.
  const duringInService = serviceLog.searchMs.slice();
  const cpuAtSearchable = sampler.cpuNow();
  if (!searchableAt) log(`TIMEOUT after ${(timeoutMs / 1000).toFixed(0)} s: ${last.processed} processed, ${last.error} in error`);

  // ---- settling: the refit an import's end may bring, and the index rebuild that follows it ----
  // Searchable already (the previous build serves); measured apart so that the latency figures
  // below are taken on a quiet service.
  const settleStarted = performance.now();
  // Silent for minutes otherwise (no calls to the API while settling): say what it waits for.
  if (searchableAt) log("every product searchable; settling (the import's last refit and its index rebuild), up to 20 min");
  // Settled: every map fit has been followed by an index rebuild (a rebuild starts with a long
  // MySQL read, during which the workers look idle), and then the workers, MariaDB and Redis stay
  // quiet for two windows of 3 s.
  const serviceCpu = () =>
    [...sampler.cpuNow()].reduce((sum, [pid, cpu]) => sum + (/^(worker|MariaDB|Redis)/.test(sampler.stats.get(pid)!.label) ? cpu : 0), 0);
  // By start: a rebuild for an earlier fit (another worker's) may end after the last fit did.
  const rebuiltAfterLastFit = () => {
    const lastFit = serviceLog.fits.at(-1)?.at;
    return lastFit === undefined || serviceLog.rebuilds.some((r) => r.at - (r.ms ?? 0) / 1000 >= lastFit - 0.5);
  };
  let settledAt = 0;
  for (let before = serviceCpu(), quiet = 0; searchableAt && performance.now() - settleStarted < 20 * 60_000; ) {
    await sleep(3000);
    const now = serviceCpu();
    quiet = now - before < 0.3 && rebuiltAfterLastFit() ? quiet + 1 : 0;
    before = now;
    if (quiet === 2) {
      settledAt = performance.now() - 6000;
      break;
    }
  }

  // ---- sizes ----
  const redisBytes = (await usedMemory(redis)) - redisBaseline;
  const mysqlBytes = await databaseBytes(server, database);
  const objectBytes = await folderBytes(join(dataDir, "objects"));

  // ---- latency at this size: one client, paced under the default rate limit (50/s per key) ----
  const measure = async (body: (i: number) => unknown, path: string) => {
    const samples: number[] = [];
    for (let i = 0; i < queriesPerCase; i++) {
      const started = performance.now();
      await api("POST", path, body(i * 7919));
      samples.push(performance.now() - started);
      await sleep(Math.max(0, 1000 / 45 - (performance.now() - started)));
    }
    return samples;
  };
  const recsBody = (i: number, filtered: boolean) => ({
    organizationId,
    catalogId,
    productId: `p${i % n}`,
    topK: 10,
    ...(filtered ? { filters: [{ field: "gender", operator: "eq", value: "Men" }] } : {}),
  });
  const latency = {
    search: await measure((i) => searchBody(i, false), "/search"),
    searchFiltered: await measure((i) => searchBody(i, true), "/search"),
    recs: await measure((i) => recsBody(i, false), "/recs"),
    recsFiltered: await measure((i) => recsBody(i, true), "/recs"),
  };
  sampler.stop();

  // ---- report ----
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  const rate = (count: number, ms: number) => ((count / ms) * 1000).toFixed(1);
  const end = searchableAt || performance.now();
  console.log(`\nsoak benchmark: ${n} products, photos ${PHOTO_DESCRIPTION} (median ${kb(samplePhotoBytes)}), titles on ${titles === "half" ? "half of them" : titles}, batches of ${batchSize}`);
  console.log(`  configuration            ${configLine(env)}; ${availableParallelism()} cores`);
  console.log(`  outcome                  ${last.processed} processed, ${last.error} in error${searchableAt ? "" : ", TIMED OUT"}`);
  console.log(`  Create Products          ${createMs.length} calls, ${seconds(createdAt - importStarted)} s (${rate(n, createdAt - importStarted)} products/s accepted; ${latencySummary(createMs)})`);
  if (processedAt) console.log(`  to status PROCESSED      ${seconds(processedAt - importStarted)} s  ->  ${rate(n, processedAt - importStarted)} images/s overall`);
  console.log(`  to every product searchable ${seconds(end - importStarted)} s  ->  ${rate(n, end - importStarted)} images/s (time to searchable)`);
  console.log(`  per tenth of the import  (images/s in each window; RSS at its end)`);
  let previous = importStarted;
  for (const [i, d] of deciles.entries()) {
    console.log(`    ${String((i + 1) * 10).padStart(3)}%  ${String(d.done).padStart(7)}  at ${seconds(d.at - importStarted).padStart(7)} s  ${rate(n / 10, d.at - previous).padStart(6)} images/s   ${d.rss}`);
    previous = d.at;
  }
  console.log(`  CPU during the import (s; ms per image; share of the ${seconds(end - importStarted)} s wall on ${availableParallelism()} cores)`);
  for (const s of sampler.stats.values()) {
    const used = (cpuAtSearchable.get(s.pid) ?? s.cpuSeconds) - (cpuAtStart.get(s.pid) ?? 0);
    const tail = (cpuAtSearchable.get(s.pid) ?? 0) - (cpuAtProcessed.get(s.pid) ?? 0);
    console.log(`    ${s.label.padEnd(18)} ${used.toFixed(1).padStart(7)} s  ${((used * 1000) / n).toFixed(2).padStart(6)} ms/image  ${((used * 100000) / (end - importStarted)).toFixed(0).padStart(3)}% of a core` + (processedAt ? `  (after PROCESSED: ${tail.toFixed(1)} s)` : ""));
  }
  console.log(`  peak RSS`);
  for (const s of sampler.stats.values()) console.log(`    ${s.label.padEnd(18)} ${mb(s.peakRssBytes).padStart(8)} (at the end ${mb(s.lastRssBytes)})`);
  console.log(`  bytes per product        MySQL ${kb(mysqlBytes / n)} (data + indexes after ANALYZE), Redis ${kb(redisBytes / n)} (used_memory growth), stored photos ${kb(objectBytes / n)}`);
  console.log(
    `  log                      ${kb(serviceLog.bytes / n)} per product (${(serviceLog.bytes / 1024 / 1024).toFixed(1)} MB, ${serviceLog.lines} lines; ` +
      `${kb((serviceLog.bytes - serviceLog.requestLineBytes) / n)} per product without per-request lines), longest line ${serviceLog.longestLine} bytes, ${serviceLog.notJson} lines not JSON`,
  );
  if (serviceLog.longestLine > 4096) console.log(`    longest line starts: ${serviceLog.longestLineStart.slice(0, 120)}`);
  for (const [problem, count] of [...serviceLog.problems].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`    ${String(count).padStart(6)} x ${problem}`);
  console.log(`  settled                  ${settledAt ? `${seconds(Math.max(0, settledAt - end))} s after every product was searchable (the import's last refit and its index rebuild done, workers and stores idle)` : "NOT within 20 min"}`);
  const rebuilt = serviceLog.rebuilds.reduce((sum, r) => sum + (r.products ?? 0), 0);
  const rebuildS = serviceLog.rebuilds.reduce((sum, r) => sum + (r.ms ?? 0), 0) / 1000;
  console.log(`  index rebuilds           ${serviceLog.rebuilds.length}: ${rebuilt} products in all (${(rebuilt / n).toFixed(2)} per product imported), ${rebuildS.toFixed(0)} s; largest ${Math.max(0, ...serviceLog.rebuilds.map((r) => r.products ?? 0))}`);
  console.log(`  map fits                 ${serviceLog.fits.length}`);
  for (const fit of serviceLog.fits) {
    console.log(`    at ${fit.at.toFixed(0).padStart(6)} s of the log: trained on ${fit.trainedOn ?? "?"}, ${fit.ms ?? "?"} ms, ${fit.bytes === undefined ? "? bytes" : mb(fit.bytes)}`);
  }
  console.log(`  search during the import p50 / p99   ${latencySummary(during)}, ${duringFailures} failed (one client, ${duringQps}/s)`);
  console.log(`    inside the API (request log) ${latencySummary(duringInService)}`);
  console.log(`  at ${n} products, one client, p50 / p99:`);
  console.log(`    search                 ${latencySummary(latency.search)}`);
  console.log(`    search, filtered       ${latencySummary(latency.searchFiltered)}  (gender == Men)`);
  console.log(`    recommendations        ${latencySummary(latency.recs)}`);
  console.log(`    recommendations, filtered ${latencySummary(latency.recsFiltered)}`);
  if (values.keep) console.log(`  kept: database ${database}, data and log in ${work}`);
} finally {
  await cleanup();
  if (!values.keep) await rm(work, { recursive: true, force: true });
}

// ---- helpers ----

function optional(pid: number | undefined, label: string) {
  return pid === undefined ? [] : [{ pid, label }];
}

function rssLine(sampler: ProcSampler): string {
  return [...sampler.stats.values()]
    .filter((s) => s.label.startsWith("API") || s.label.startsWith("worker"))
    .map((s) => `${s.label.split(" (")[0]} ${mb(s.lastRssBytes)}`)
    .join(", ");
}

function configLine(env: Record<string, string | undefined>): string {
  const set = Object.keys(env).filter((k) => /^(WORKERS|PROCESSING_|IMAGE_RUNTIME|LOG_LEVEL|SEARCH_|RATE_LIMIT)/.test(k));
  return set.length === 0 ? "npm start's defaults" : `npm start's defaults with ${set.map((k) => `${k}=${env[k]}`).join(" ")}`;
}

function client(base: string, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(base + path, {
      method,
      headers: { [API_KEY_HEADER]: key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
}

async function waitReady(base: string, service: ReturnType<typeof spawn>, limitMs: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (service.exitCode !== null) throw new Error(`the service exited with code ${service.exitCode}; see its log`);
    try {
      const response = await fetch(`${base}/readyz`);
      const body = (await response.json()) as { workers?: { configured: number; ready: number } };
      if (response.ok && body.workers && body.workers.ready >= body.workers.configured) return body.workers.ready;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  throw new Error(`the service was not ready within ${limitMs / 1000} s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The MySQL server's own process (this machine may run several), from its pid file when readable. */
async function serverPid(pool: mysql.Pool): Promise<number | undefined> {
  try {
    const [rows] = await pool.query("SELECT @@pid_file AS file");
    const pid = Number(readFileSync((rows as { file: string }[])[0]!.file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

async function databaseBytes(pool: mysql.Pool, schema: string): Promise<number> {
  const [tables] = await pool.query("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?", [schema]);
  for (const { name } of tables as { name: string }[]) await pool.query(`ANALYZE TABLE \`${schema}\`.\`${name}\``);
  const [rows] = await pool.query("SELECT SUM(data_length + index_length) AS bytes FROM information_schema.tables WHERE table_schema = ?", [schema]);
  return Number((rows as { bytes: string | null }[])[0]?.bytes ?? 0);
}

async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

async function sampleSize(count: number): Promise<number> {
  const sizes: number[] = [];
  for (let i = 0; i < Math.min(count, 101); i++) sizes.push((await stat(photoPath(photoCache, Math.floor((i * count) / 101)))).size);
  return sizes.sort((a, b) => a - b)[sizes.length >> 1]!;
}
