// What work that must find keys costs Redis in a large keyspace: --catalogs catalogs of
// --keys-per-catalog keys each (named as a catalog's lexical keys are: its words' postings are most
// of a catalog's keys, about one per distinct word), then
// - the sweeper's search for indexes of deleted catalogs (RedisVectorIndex.catalogIds, a SCAN of
//   every key), timed by Redis's own command statistics, with one PING every 5 ms meanwhile (what
//   it adds to any other command's wait);
// - a rebuild of one more catalog of --products products replacing its previous build
//   (RedisVectorIndex.rebuild), the same way: what the replaced build's cleanup costs among them;
// - that catalog's drop (RedisVectorIndex.drop, as DeleteCatalog runs it: by name), beside the drop
//   of a copy of it as the orphan sweep runs it (`everyKey`: by name, then one SCAN of every key;
//   every drop took two such scans before drops went by name).
//
//   npx tsx bench/keyspace.ts [--catalogs 100] [--keys-per-catalog 10000] [--products 2000]
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config/index.js";
import { provisionRedis8 } from "../src/provisioning/index.js";
import { RedisVectorIndex } from "../src/storage/redis/index.js";
import { freePort } from "../test/support/free-port.js";
import { seededRandom } from "../test/support/random.js";

const { values } = parseArgs({
  options: { catalogs: { type: "string", default: "100" }, "keys-per-catalog": { type: "string", default: "10000" }, products: { type: "string", default: "2000" } },
});
const CATALOGS = Number(values.catalogs);
const PER_CATALOG = Number(values["keys-per-catalog"]);
const PRODUCTS = Number(values.products);
const DIMENSIONS = 203;
const config = loadConfig(process.env);
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-bench-keyspace-"));
const server = await provisionRedis8({ cacheDir: config.cacheDir, port: await freePort(), dataDir, log: () => {} });
const redis = new Redis(server.url);
const probe = new Redis(server.url);
const prefix = config.redis.keyPrefix;

/** Calls and microseconds by command since the last RESETSTAT. */
const commandStats = async () => {
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const [, name, calls, usec] of (await redis.info("commandstats")).matchAll(/cmdstat_(\S+?):calls=(\d+),usec=(\d+)/g)) {
    stats.set(name!.toLowerCase(), { calls: Number(calls), usec: Number(usec) });
  }
  return stats;
};

try {
  for (let c = 0; c < CATALOGS; c++) {
    const tag = `{${randomUUID()}}`;
    const pipeline = redis.pipeline();
    pipeline.hset(`${prefix}${tag}:meta`, "version", "bench");
    for (let k = 0; k < PER_CATALOG; k++) pipeline.hset(`${prefix}${tag}:lex:hbench:w:word${k}`, "p", "s");
    await pipeline.exec();
  }
  const keys = await redis.dbsize();
  const index = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: config.search.ef });
  for (let round = 1; round <= 2; round++) {
    await redis.config("RESETSTAT");
    const waits: number[] = [];
    let scanning = true;
    const probing = (async () => {
      while (scanning) {
        const sent = performance.now();
        await probe.ping();
        waits.push(performance.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const started = performance.now();
    const cpu = process.cpuUsage();
    const found = await index.catalogIds();
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu);
    scanning = false;
    await probing;
    const { calls, usec } = (await commandStats()).get("scan") ?? { calls: 0, usec: 0 };
    waits.sort((a, b) => a - b);
    const p = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!.toFixed(2);
    console.log(
      `round ${round}: ${keys} keys, ${found.length} catalogs found; SCAN ${calls} calls, Redis ${(usec / 1000).toFixed(0)} ms ` +
        `(${(usec / calls).toFixed(0)} us a call, ${((usec * 1000) / keys).toFixed(0)} ns a key); service CPU ${((used.user + used.system) / 1000).toFixed(0)} ms; ` +
        `wall ${wall.toFixed(0)} ms; PING during it p50 ${p(0.5)} / p99 ${p(0.99)} / max ${p(1)} ms (load average ${loadavg()[0]!.toFixed(1)})`,
    );
  }
  const random = seededRandom(7);
  const entries = Array.from({ length: PRODUCTS }, (_, i) => {
    const vector = Float32Array.from({ length: DIMENSIONS }, () => random() - 0.5);
    return { productId: `p${i}`, vector, attributes: { rank: "NO_BOOST" as const }, words: [`brand${i % 50}`, `word${i}`, "shirt"] };
  });
  async function* pages(): AsyncGenerator<typeof entries> {
    for (let i = 0; i < entries.length; i += 500) yield entries.slice(i, i + 500);
  }
  const rebuilt = randomUUID();
  await index.rebuild(rebuilt, "bench", pages());
  for (let round = 1; round <= 2; round++) {
    await redis.config("RESETSTAT");
    const started = performance.now();
    await index.rebuild(rebuilt, "bench", pages());
    const wall = performance.now() - started;
    const stats = await commandStats();
    const all = [...stats].filter(([name]) => name !== "config").reduce((sum, [, s]) => sum + s.usec, 0);
    const scan = stats.get("scan") ?? { calls: 0, usec: 0 };
    console.log(
      `rebuild of ${PRODUCTS} products replacing its previous build, among ${keys} keys: Redis commands ${(all / 1000).toFixed(0)} ms ` +
        `(a script's inner commands counted in it and again on their own), ` +
        `of which SCAN ${scan.calls} calls, ${(scan.usec / 1000).toFixed(0)} ms; wall ${wall.toFixed(0)} ms`,
    );
  }
  const copy = randomUUID();
  await index.rebuild(copy, "bench", pages());
  for (const [label, catalogId, everyKey] of [["by name (a delete)", rebuilt, false], ["with everyKey (the orphan sweep)", copy, true]] as const) {
    await redis.config("RESETSTAT");
    const started = performance.now();
    await index.drop(catalogId, { everyKey });
    const wall = performance.now() - started;
    const stats = await commandStats();
    const all = [...stats].filter(([name]) => name !== "config").reduce((sum, [, s]) => sum + s.usec, 0);
    const scan = stats.get("scan") ?? { calls: 0, usec: 0 };
    const left = (await redis.keys(`${prefix}{${catalogId}}*`)).length;
    console.log(
      `drop of a ${PRODUCTS}-product catalog ${label}, among ${keys} keys: Redis commands ${(all / 1000).toFixed(0)} ms, ` +
        `of which SCAN ${scan.calls} calls, ${(scan.usec / 1000).toFixed(0)} ms; wall ${wall.toFixed(0)} ms; its keys left ${left}`,
    );
  }
} finally {
  redis.disconnect();
  probe.disconnect();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
