// What the shared rate limit (RATE_LIMIT_STORE=redis, the default) costs a call: the service's own
// Redis buckets (src/storage/redis/rate-limit-buckets.ts) against a Redis 8 started for the run,
// one caller taking in turn, as every RPC's interceptor does. A key of 40 calls a second takes no
// tokens ahead (one round trip a call); the default limit (1,000 a second in bursts of 2,000) takes
// a lease's worth a round trip. Per call: wall time, this process's CPU, Redis's CPU; the rounds
// alternate so that both meet the same minute.
//
//   npx tsx bench/rate-limit.ts [--calls 1500] [--rounds 3]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config/index.js";
import { provisionRedis8 } from "../src/provisioning/index.js";
import { RedisRateLimitBuckets } from "../src/storage/redis/index.js";
import { leaseSize } from "../src/storage/redis/rate-limit-buckets.js";
import { freePort } from "../test/support/free-port.js";

const { values } = parseArgs({ options: { calls: { type: "string", default: "1500" }, rounds: { type: "string", default: "3" } } });
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-bench-rate-limit-"));
const server = await provisionRedis8({ cacheDir: loadConfig(process.env).cacheDir, port: await freePort(), dataDir, log: () => {} });
const redis = new Redis(server.url);

async function redisCpuUs(): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`\\b${name}:([\\d.]+)`).exec(info)?.[1] ?? "0");
  return (field("used_cpu_sys") + field("used_cpu_user")) * 1e6;
}

async function run(label: string, limit: { ratePerSecond: number; burst: number }, round: number): Promise<void> {
  const buckets = new RedisRateLimitBuckets(redis, `bench-rate-limit-${round}-${limit.ratePerSecond}:`);
  const [cpu0, redis0, t0] = [process.cpuUsage(), await redisCpuUs(), process.hrtime.bigint()];
  let allowed = 0;
  for (let i = 0; i < CALLS; i++) if ((await buckets.take("key", limit)).allowed) allowed++;
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / CALLS;
  const cpu = process.cpuUsage(cpu0);
  const redisUs = ((await redisCpuUs()) - redis0) / CALLS;
  console.log(
    `  ${label.padEnd(40)} tokens a round trip ${String(leaseSize(limit)).padStart(2)}  allowed ${allowed}/${CALLS}  ` +
      `wall ${wallUs.toFixed(1).padStart(6)} us  this process's CPU ${((cpu.user + cpu.system) / CALLS).toFixed(1).padStart(6)} us  Redis CPU ${redisUs.toFixed(1).padStart(5)} us a call`,
  );
}

try {
  console.log(`rate limit bench: ${CALLS} calls a run, one caller, Redis ${server.url}`);
  for (let round = 0; round < ROUNDS; round++) {
    await run("40 calls/s, bursts of 2,000 (no lease)", { ratePerSecond: 40, burst: 2000 }, round);
    await run("1,000 calls/s, bursts of 2,000 (default)", { ratePerSecond: 1000, burst: 2000 }, round);
  }
} finally {
  await redis.quit();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
