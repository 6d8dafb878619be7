// Token buckets kept in Redis, so that every API process behind a balancer takes from the same
// bucket of a key. One script call per RPC: refill by the time elapsed on Redis's own clock (the
// processes' clocks never meet), take a token or say how long until one is back. A bucket expires
// once it would be full again, so idle keys cost nothing.
import type { BucketLimit, RateLimitBuckets, TakeResult } from "../../operations/index.js";
import type { RedisClient } from "./connection.js";

// KEYS[1] the bucket; ARGV rate per second, burst. Reply {allowed (0/1), retry-after seconds}.
const TAKE_SCRIPT = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ms', 'rate', 'burst')
local tokens = tonumber(b[1])
local last = tonumber(b[2])
if tokens == nil or last == nil or tonumber(b[3]) ~= rate or tonumber(b[4]) ~= burst then
  tokens = burst
  last = ms
end
tokens = math.min(burst, tokens + math.max(0, ms - last) / 1000 * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.max(1, math.ceil((1 - tokens) / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', tostring(ms), 'rate', ARGV[1], 'burst', ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {allowed, wait}
`;

interface TakeCommand {
  vitrineRateLimitTake(key: string, rate: string, burst: string): Promise<[number, number]>;
}

export class RedisRateLimitBuckets implements RateLimitBuckets {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
  ) {
    redis.defineCommand("vitrineRateLimitTake", { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  async take(key: string, limit: BucketLimit): Promise<TakeResult> {
    // The caller's key in a hash tag of its own: on a cluster, buckets spread over the shards.
    const [allowed, wait] = await (this.redis as unknown as TakeCommand).vitrineRateLimitTake(
      `${this.keyPrefix}ratelimit:{${key}}`,
      String(limit.ratePerSecond),
      String(limit.burst),
    );
    return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterSeconds: wait };
  }
}
