// What the sweeper's search for indexes of deleted catalogs costs Redis (RedisVectorIndex.catalogIds,
// a SCAN of every key): a keyspace of --catalogs catalogs of --keys-per-catalog keys each (named as
// a catalog's lexical keys are: its words' postings are most of a catalog's keys, about one per
// distinct word), then the scan the service runs, timed by Redis's own command statistics, and
// while it runs, one PING every 5 ms (what the scan adds to any other command's wait).
//
//   npx tsx bench/orphan-sweep.ts [--catalogs 100] [--keys-per-catalog 10000]
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

const { values } = parseArgs({ options: { catalogs: { type: "string", default: "100" }, "keys-per-catalog": { type: "string", default: "10000" } } });
const CATALOGS = Number(values.catalogs);
const PER_CATALOG = Number(values["keys-per-catalog"]);
const config = loadConfig(process.env);
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-bench-orphans-"));
const server = await provisionRedis8({ cacheDir: config.cacheDir, port: await freePort(), dataDir, log: () => {} });
const redis = new Redis(server.url);
const probe = new Redis(server.url);
const prefix = config.redis.keyPrefix;

const scanStats = async () => {
  const text = await redis.info("commandstats");
  const match = /cmdstat_scan:calls=(\d+),usec=(\d+)/.exec(text);
  return { calls: Number(match?.[1] ?? 0), usec: Number(match?.[2] ?? 0) };
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
    const { calls, usec } = await scanStats();
    waits.sort((a, b) => a - b);
    const p = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!.toFixed(2);
    console.log(
      `round ${round}: ${keys} keys, ${found.length} catalogs found; SCAN ${calls} calls, Redis ${(usec / 1000).toFixed(0)} ms ` +
        `(${(usec / calls).toFixed(0)} us a call, ${((usec * 1000) / keys).toFixed(0)} ns a key); service CPU ${((used.user + used.system) / 1000).toFixed(0)} ms; ` +
        `wall ${wall.toFixed(0)} ms; PING during it p50 ${p(0.5)} / p99 ${p(0.99)} / max ${p(1)} ms (load average ${loadavg()[0]!.toFixed(1)})`,
    );
  }
} finally {
  redis.disconnect();
  probe.disconnect();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
