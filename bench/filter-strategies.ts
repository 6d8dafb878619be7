// Filtered-search strategies on a raw Redis 8 vector set, measured side by side on one load (no
// service): how each way of answering "the 10 nearest products that pass a filter" trades recall
// against latency, for filters matching 10%, 1% and 0.1% of the set and a combination of two.
// The numbers behind the strategy the service uses (README: "Filtered search").
//
//   npx tsx bench/filter-strategies.ts [--n 100000] [--queries 100] [--redis-url redis://...] [--variants all|focused|ef|expr] [--m auto]
//
// --redis-url keeps the loaded set between runs in a Redis 8 started for this alone (npm run redis8;
// it is FLUSHALLed when it does not hold the set yet); the default starts one for the run.
// --variants focused: small-EF FILTER and post-filter variants; ef: the walk's depth alone; expr:
// the service's expression (filter-expression.ts) against the bare comparison. --m: HNSW's links per
// node (VADD ... M), read as SEARCH_HNSW_M is: a number, or auto (the service's pick for a set of N).
//
// Data: N elements of the service's layout (elementVector, 203 dims, NOQUANT, SETATTR) around 200
// random clusters; attributes independent of the vectors (the hard case for in-graph filtering):
// section (10 values), shop (100), line (1,000), colour (10). Ground truth: brute force in JS.
import { mkdtempSync, rmSync } from "node:fs";
import { homedir, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { provisionRedis8 } from "../src/provisioning/index.js";
import { loadConfig } from "../src/config/index.js";
import { hnswMFor } from "../src/search/index.js";
import { elementVector, queryVector } from "../src/search/vector-layout.js";
import { freePort } from "../test/support/free-port.js";
import { randomUnit, seededRandom } from "../test/support/random.js";
import { vectorToBytes as fp32 } from "../src/storage/index.js";
import { redisFilterExpression } from "../src/storage/redis/filter-expression.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "100000" }, queries: { type: "string", default: "100" }, "redis-url": { type: "string" }, variants: { type: "string", default: "all" }, m: { type: "string", default: "auto" } } });
const N = Number(values.n);
const Q = Number(values.queries);
const { hnswM, hnswLargeFrom } = loadConfig({ SEARCH_HNSW_M: values.m }).search;
const M = String(hnswMFor(hnswM, hnswLargeFrom, N));
const DIMS = 100;
const K = 10;
const random = seededRandom(7);

function jitter(base: Float32Array, sigma: number): Float32Array {
  const out = new Float32Array(base.length);
  let n = 0;
  for (let i = 0; i < base.length; i++) {
    const u = Math.max(random(), 1e-12);
    out[i] = base[i]! + sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    n += out[i]! * out[i]!;
  }
  n = Math.sqrt(n);
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / n;
  return out;
}

const clusters = Array.from({ length: 200 }, () => randomUnit(random, DIMS));
const width = 2 * DIMS + 3;
const elements = new Float32Array(N * width);
const attrs: Record<string, string | number>[] = [];
for (let i = 0; i < N; i++) {
  const c = clusters[Math.floor(random() * clusters.length)]!;
  const t = jitter(c, 0.08);
  const v = jitter(t, 0.1);
  const r = random();
  elements.set(elementVector(v, t, r < 0.02 ? "SUPER_BOOST" : r < 0.07 ? "BOOST" : "NO_BOOST"), i * width);
  attrs.push({
    section: `s${Math.floor(random() * 10)}`,
    shop: `h${Math.floor(random() * 100)}`,
    line: `l${Math.floor(random() * 1000)}`,
    colour: `c${Math.floor(random() * 10)}`,
    price: Math.round(random() * 500),
  });
}


/** (EF, FILTER-EF) pairs each --variants asks of VSIM ... FILTER. */
const DEPTHS: Record<"all" | "focused" | "ef", [number, number][]> = {
  all: [[500, 10000], [1000, 20000], [1000, 100000], [4000, 100000]],
  focused: [[20, 2000], [20, 20000], [50, 5000], [50, 50000], [100, 100000]],
  // The walk's depth alone, at the service's FILTER-EF and at ten times it.
  ef: [[20, 2000], [40, 2000], [60, 2000], [100, 2000], [150, 2000], [20, 20000], [40, 20000], [60, 20000]],
};

interface Filter {
  label: string;
  expr: string;
  test: (a: Record<string, string | number>) => boolean;
  postings: string[];
}
const FILTERS: Filter[] = [
  { label: "10% (section)", expr: '.section == "s3"', test: (a) => a.section === "s3", postings: ["section:s3"] },
  { label: "1% (shop)", expr: '.shop == "h42"', test: (a) => a.shop === "h42", postings: ["shop:h42"] },
  { label: "0.1% (line)", expr: '.line == "l777"', test: (a) => a.line === "l777", postings: ["line:l777"] },
  { label: "1% (section and colour)", expr: '.section == "s3" and .colour == "c5"', test: (a) => a.section === "s3" && a.colour === "c5", postings: ["section:s3", "colour:c5"] },
];

const queries = Array.from({ length: Q }, () => {
  const c = clusters[Math.floor(random() * clusters.length)]!;
  const t = jitter(c, 0.05);
  return queryVector({ visual: t, text: t, visualWeight: 0.5, boosts: { boost: 0.05, superBoost: 0.1 } })!.vector;
});

function truth(q: Float32Array, f: Filter): string[] {
  const best: [number, number][] = [];
  for (let i = 0; i < N; i++) {
    if (!f.test(attrs[i]!)) continue;
    let d = 0;
    for (let j = 0; j < width; j++) d += elements[i * width + j]! * q[j]!;
    best.push([d, i]);
  }
  best.sort((a, b) => b[0] - a[0]);
  return best.slice(0, K).map(([, i]) => `p${i}`);
}

const CANDIDATES = `
local ids
if #KEYS == 2 then ids = redis.call('SMEMBERS', KEYS[2]) else
  local keys = {} for i = 2, #KEYS do keys[#keys + 1] = KEYS[i] end
  ids = redis.call('SINTER', unpack(keys)) end
local out = {}
for _, id in ipairs(ids) do
  local e = redis.call('VEMB', KEYS[1], id, 'RAW')
  if e then out[#out + 1] = id; out[#out + 1] = e[2] end
end
return out`;

const CANDIDATES_LUA_DOT = `
local ids
if #KEYS == 2 then ids = redis.call('SMEMBERS', KEYS[2]) else
  local keys = {} for i = 2, #KEYS do keys[#keys + 1] = KEYS[i] end
  ids = redis.call('SINTER', unpack(keys)) end
local n = tonumber(ARGV[2])
local fmt = '<' .. string.rep('f', n)
local q = {struct.unpack(fmt, ARGV[1])}
local best = {}
for _, id in ipairs(ids) do
  local e = redis.call('VEMB', KEYS[1], id, 'RAW')
  if e then
    local v = {struct.unpack(fmt, e[2])}
    local d = 0
    for j = 1, n do d = d + v[j] * q[j] end
    best[#best + 1] = {d, id}
  end
end
table.sort(best, function(a, b) return a[1] > b[1] end)
local out = {}
for i = 1, math.min(10, #best) do out[#out + 1] = best[i][2]; out[#out + 1] = tostring(best[i][1]) end
return out`;

const POSTFILTER = `
local found = redis.call('VSIM', KEYS[1], 'FP32', ARGV[1], 'WITHSCORES', 'COUNT', ARGV[2], 'EF', ARGV[2])
local out = {}
for i = 1, #found, 2 do out[#out + 1] = found[i]; out[#out + 1] = redis.call('VGETATTR', KEYS[1], found[i]) end
return out`;

async function main(): Promise<void> {
  // --redis-url: a Redis 8 kept between runs (npm run redis8); the set is loaded once.
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-filter-strategies-"));
  const server = values["redis-url"] ? undefined : await provisionRedis8({ cacheDir: join(homedir(), ".cache", "vitrine"), port: await freePort(), dataDir });
  const redis = new Redis(values["redis-url"] ?? server!.url);
  try {
    const started = performance.now();
    const vinfo = ((await redis.call("VINFO", "v")) ?? []) as unknown[];
    const loaded = Number(await redis.call("VCARD", "v")) === N && Number(vinfo[vinfo.indexOf("hnsw-m") + 1]) === Number(M);
    if (!loaded) await redis.flushall();
    for (let s = 0; s < (loaded ? 0 : N); s += 500) {
      const p = redis.pipeline();
      for (let i = s; i < Math.min(N, s + 500); i++) {
        p.call("VADD", "v", "FP32", fp32(elements.subarray(i * width, (i + 1) * width)), `p${i}`, "CAS", "NOQUANT", "M", M, "SETATTR", JSON.stringify(attrs[i]));
        for (const field of ["section", "shop", "line", "colour"]) p.sadd(`f:${field}:${attrs[i]![field]}`, `p${i}`);
      }
      await p.exec();
    }
    console.log(`N ${N}, M ${M}: loaded in ${((performance.now() - started) / 1000).toFixed(0)} s; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
    const candidates = (await redis.script("LOAD", CANDIDATES)) as string;
    const luaDot = (await redis.script("LOAD", CANDIDATES_LUA_DOT)) as string;

    const measure = async (label: string, f: Filter, run: (q: Float32Array) => Promise<string[]>) => {
      const lat: number[] = [];
      let recall = 0;
      for (const [i, q] of queries.entries()) {
        const t0 = performance.now();
        const got = await run(q);
        lat.push(performance.now() - t0);
        const want = truths.get(f)![i]!;
        const g = new Set(got.slice(0, K));
        recall += want.length === 0 ? 1 : want.filter((id) => g.has(id)).length / want.length;
      }
      lat.sort((a, b) => a - b);
      const p = (x: number) => lat[Math.min(lat.length - 1, Math.ceil(x * lat.length) - 1)]!.toFixed(2);
      console.log(`  ${label.padEnd(54)} recall@10 ${(recall / queries.length).toFixed(3)}   p50 ${p(0.5).padStart(7)} ms   p99 ${p(0.99).padStart(7)} ms`);
    };
    const truths = new Map<Filter, string[][]>();
    for (const f of FILTERS) truths.set(f, queries.map((q) => truth(q, f)));
    const idsOf = (reply: unknown[]) => reply.filter((_, k) => k % 2 === 0).map(String);
    const unfiltered: Filter = { label: "none", expr: "", test: () => true, postings: [] };
    truths.set(unfiltered, queries.map((q) => truth(q, unfiltered)));
    console.log(`unfiltered`);
    for (const ef of [250]) {
      await measure(`VSIM EF ${ef}`, unfiltered, async (q) => idsOf((await redis.call("VSIM", "v", "FP32", fp32(q), "WITHSCORES", "COUNT", "10", "EF", String(ef))) as unknown[]));
    }
    for (const f of FILTERS) {
      const size = f.postings.length === 1 ? await redis.scard(`f:${f.postings[0]}`) : (await redis.sinter(...f.postings.map((p) => `f:${p}`))).length;
      console.log(`${f.label}: ${size} matches`);
      const vsim = (count: number, ef: number, filterEf: number, expr = f.expr) => async (q: Float32Array) =>
        idsOf((await redis.call("VSIM", "v", "FP32", fp32(q), "WITHSCORES", "COUNT", String(count), "EF", String(ef), "FILTER", expr, "FILTER-EF", String(filterEf))) as unknown[]);
      await measure(`VSIM FILTER COUNT 20 EF 250 FILTER-EF 2000 (service now)`, f, vsim(20, 250, 2000));
      if (values.variants === "ef") {
        for (const [ef, fef] of DEPTHS.ef) await measure(`VSIM FILTER COUNT 20 EF ${ef} FILTER-EF ${fef}`, f, vsim(20, ef, fef));
        continue;
      }
      if (values.variants === "expr") {
        // The expression the service pushes down (arrays and mixed types guarded) against the bare comparison.
        const service = redisFilterExpression(f.postings.map((p) => ({ field: p.split(":")[0]!, operator: "eq" as const, value: p.split(":")[1]! })))!;
        for (const ef of [40, 250]) {
          await measure(`VSIM FILTER (bare) COUNT 20 EF ${ef} FILTER-EF 2000`, f, vsim(20, ef, 2000));
          await measure(`VSIM FILTER (service's) COUNT 20 EF ${ef} FILTER-EF 2000`, f, vsim(20, ef, 2000, service));
        }
        continue;
      }
      for (const [ef, fef] of values.variants === "all" ? DEPTHS.all : DEPTHS.focused) {
        await measure(`VSIM FILTER COUNT ${Math.min(20, ef)} EF ${ef} FILTER-EF ${fef}`, f, vsim(Math.min(20, ef), ef, fef));
      }
      const share = size / N;
      for (const margin of [2, 4]) {
        const c = Math.ceil((20 / share) * margin);
        if (c > 20000) continue;
        await measure(`VSIM unfiltered COUNT ${c} EF ${c} + VGETATTR each, post-filter`, f, async (q) => {
          const reply = (await redis.eval(POSTFILTER, 1, "v", fp32(q), String(c))) as string[];
          const out: string[] = [];
          for (let k = 0; k < reply.length && out.length < K; k += 2) if (f.test(JSON.parse(reply[k + 1]!))) out.push(reply[k]!);
          return out;
        });
      }
      // As the service scans a value set with the rest of the filter (COUNT: twice topK).
      await measure(`VSIM TRUTH FILTER COUNT 20 (exact scan)`, f, async (q) => idsOf((await redis.call("VSIM", "v", "FP32", fp32(q), "WITHSCORES", "COUNT", "20", "TRUTH", "FILTER", f.expr)) as unknown[]));
      if (size <= 5000) {
        await measure(`postings + VEMB RAW, dot in Node (${size} candidates)`, f, async (q) => {
          const reply = (await redis.callBuffer("EVALSHA", candidates, String(1 + f.postings.length), "v", ...f.postings.map((p) => `f:${p}`))) as Buffer[];
          const scored: [number, string][] = [];
          for (let k = 0; k < reply.length; k += 2) {
            const blob = reply[k + 1]!;
            let d = 0;
            for (let j = 0; j < width; j++) d += blob.readFloatLE(j * 4) * q[j]!;
            scored.push([d, String(reply[k])]);
          }
          scored.sort((a, b) => b[0] - a[0]);
          return scored.slice(0, K).map(([, id]) => id);
        });
        await measure(`postings + VEMB RAW, dot in Lua (${size} candidates)`, f, async (q) =>
          idsOf((await redis.call("EVALSHA", luaDot, String(1 + f.postings.length), "v", ...f.postings.map((p) => `f:${p}`), fp32(q), String(width))) as unknown[]),
        );
      }
    }
    console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  } finally {
    redis.disconnect();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
