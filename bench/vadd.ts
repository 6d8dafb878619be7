// Bulk insert benchmark for the vector index: what a rebuild after a map refit (or an import's
// index sync) costs Redis, and what it does to queries meanwhile. N clustered unit vectors of the
// service's layout (203 dimensions) are added in pipelines of 500 while a second client sends one
// VSIM every 20 ms; for each way of adding them it prints wall time and Redis CPU per insert and the
// VSIM latency during the load. The raw VADD variants are the baselines; "service" is the index
// the service runs (RedisVectorIndex.upsert). Recall is `npm run bench:search`'s business: these
// clustered vectors are too easy to tell build settings apart.
//
//   npx tsx bench/vadd.ts [--n 20000]
//   SEARCH_FILTER_POSTINGS=on SEARCH_VALUE_SETS=shop npx tsx bench/vadd.ts   (adds a rebuild writing value sets)
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
import { vectorToBytes as fp32 } from "../src/storage/index.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "20000" } } });
const N = Number(values.n);
const DIMENSIONS = 203;
const QUERY_EF = String(loadConfig(process.env).search.ef);
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-bench-vadd-"));
const server = await provisionRedis8({ cacheDir: loadConfig(process.env).cacheDir, port: await freePort(), dataDir, log: () => {} });
const writer = new Redis(server.url);
const reader = new Redis(server.url);

const random = seededRandom(3);
const centres = Array.from({ length: 50 }, () => Float32Array.from({ length: DIMENSIONS }, () => random() - 0.5));
const vectors = Array.from({ length: N }, (_, i) => {
  const centre = centres[i % centres.length]!;
  const v = Float32Array.from({ length: DIMENSIONS }, (_, j) => centre[j]! + (random() - 0.5) * 0.6);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
});
const redisCpu = async () => {
  const info = await writer.info("cpu");
  return Number(/used_cpu_user:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
};
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function measure(label: string, key: string, load: () => Promise<void>): Promise<void> {
  const latencies: number[] = [];
  let loading = true;
  const probe = (async () => {
    for (let i = 0; loading; i++) {
      const started = performance.now();
      await reader.call("VSIM", key, "FP32", fp32(vectors[(i * 7) % N]!), "COUNT", "10", "EF", QUERY_EF).catch(() => undefined);
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const cpuBefore = await redisCpu();
  const started = performance.now();
  await load();
  const wall = performance.now() - started;
  const cpu = (await redisCpu()) - cpuBefore;
  loading = false;
  await probe;
  latencies.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(26)} ${(wall / N).toFixed(3).padStart(6)} ms  ${((cpu * 1000) / N).toFixed(3).padStart(6)} ms   ` +
      `${percentile(latencies, 0.5).toFixed(1).padStart(6)} / ${percentile(latencies, 0.99).toFixed(1).padStart(6)} ms`,
  );
  await writer.del(key);
}

function raw(options: string[]): (key: string) => () => Promise<void> {
  return (key) => async () => {
    for (let start = 0; start < N; start += 500) {
      const pipeline = writer.pipeline();
      for (let i = start; i < Math.min(N, start + 500); i++) {
        pipeline.call("VADD", key, "FP32", fp32(vectors[i]!), `p${i}`, ...options, "SETATTR", '{"rank":"NO_BOOST","gender":"Men"}');
      }
      await pipeline.exec();
    }
  };
}

console.log(`${N} inserts of ${DIMENSIONS} dimensions in pipelines of 500, Redis ${server.version}; VSIM every 20 ms with EF ${QUERY_EF}; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
console.log(`${"".padEnd(26)} wall/insert  Redis CPU/insert  VSIM during p50 / p99`);
try {
  await measure("VADD NOQUANT (EF 200)", "raw-default", raw(["NOQUANT"])("raw-default"));
  await measure("VADD NOQUANT EF 100", "raw-ef100", raw(["NOQUANT", "EF", "100"])("raw-ef100"));
  await measure("VADD CAS NOQUANT (EF 200)", "raw-cas", raw(["CAS", "NOQUANT"])("raw-cas"));
  const { filterPostings, valueSetFields } = loadConfig(process.env).search;
  const index = new RedisVectorIndex(writer, { keyPrefix: "bench:", ef: Number(QUERY_EF), filterPostings, valueSetFields });
  await measure("service (upsert)", "bench:{c}:vectors", async () => {
    for (let start = 0; start < N; start += 500) {
      const entries = vectors.slice(start, start + 500).map((vector, k) => ({ productId: `p${start + k}`, vector, attributes: { rank: "NO_BOOST", gender: "Men" }, words: [] }));
      await index.upsert("c", entries);
    }
  });
  if (filterPostings && valueSetFields.length > 0) {
    // A rebuild (value sets are a build's), each field with 10 values: every insert also goes into
    // one value set per field. VSIM probes the set being built.
    await measure(`service (rebuild, value sets ${valueSetFields.join(",")})`, "bench:{v}:building", async () => {
      await index.rebuild("v", "bench|", (async function* () {
        for (let start = 0; start < N; start += 500) {
          yield vectors.slice(start, start + 500).map((vector, k) => {
            const i = start + k;
            const attributes = Object.fromEntries([["rank", "NO_BOOST"], ...valueSetFields.map((f) => [f, `${f}${i % 10}`])]);
            return { productId: `p${i}`, vector, attributes, words: [] };
          });
        }
      })());
    });
    await index.drop("v");
  }
} finally {
  writer.disconnect();
  reader.disconnect();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
