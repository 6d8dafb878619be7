// Token buckets kept in Redis, so that every API process behind a balancer takes from the same
// bucket of a key: refill by the time elapsed on Redis's own clock (the processes' clocks never
// meet), take tokens or say how long until one is back. A bucket expires once it would be full
// again, so idle keys cost nothing.
//
// A round trip to Redis costs a call about as much as a cheap RPC's own work (on a 2-core VM:
// 140 us of wall time and 120 us of the process's CPU), so at high rates a process takes a few
// tokens at once and spends them in the next LEASE_MS: never more than the bucket holds (every
// token is taken from the shared bucket before a call spends it), and at most leaseSize() tokens
// a process left unspent when its calls stop.
import type { BucketLimit, RateLimitBuckets, TakeResult } from "../../operations/index.js";
import type { RedisClient } from "./connection.js";

/** How long tokens taken ahead stay spendable; unspent by then, they are dropped. */
export const LEASE_MS = 250;
/** Tokens taken ahead are at most this share of a second's rate: 20 ms of a key's calls. */
const LEASE_SHARE_OF_RATE = 1 / 50;
/** ... and of the bucket, so that a burst is never mostly held by one process. */
const LEASE_SHARE_OF_BURST = 1 / 8;
const MOST_LEASED = 64;
/** Keys whose leases are remembered; past it, the expired ones are dropped. */
export const LEASES_KEPT = 10_000;

/**
 * Tokens one round trip takes for a key of `limit`: 1 (no lease) below 100 calls a second, 20 at
 * the default 1,000 a second in bursts of 2,000, at most 64.
 */
export function leaseSize(limit: BucketLimit): number {
  return Math.max(1, Math.min(MOST_LEASED, Math.floor(limit.ratePerSecond * LEASE_SHARE_OF_RATE), Math.floor(limit.burst * LEASE_SHARE_OF_BURST)));
}

// KEYS[1] the bucket; ARGV rate per second, burst, tokens wanted (1 when absent).
// Reply {tokens taken (0: refused; else 1 up to those wanted, as many as the bucket holds whole),
// retry-after seconds}.
const TAKE_SCRIPT = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3] or '1')
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ms', 'rate', 'burst')
local tokens = tonumber(b[1])
local last = tonumber(b[2])
if tokens == nil or last == nil or tonumber(b[3]) ~= rate or tonumber(b[4]) ~= burst then
  tokens = burst
  last = ms
end
tokens = math.min(burst, tokens + math.max(0, ms - last) / 1000 * rate)
local taken = 0
local wait = 0
if tokens >= 1 then
  taken = math.min(want, math.floor(tokens))
  tokens = tokens - taken
else
  wait = math.max(1, math.ceil((1 - tokens) / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', tostring(ms), 'rate', ARGV[1], 'burst', ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {taken, wait}
`;

interface TakeCommand {
  vitrineRateLimitTake(key: string, rate: string, burst: string, want: string): Promise<[number, number]>;
}

/** Tokens a process took ahead for a key, spendable until `until` (ms) under the limit they were taken for. */
interface Lease extends BucketLimit {
  tokens: number;
  until: number;
}

export class RedisRateLimitBuckets implements RateLimitBuckets {
  private readonly leases = new Map<string, Lease>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly now: () => number = Date.now,
  ) {
    redis.defineCommand("vitrineRateLimitTake", { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  async take(key: string, limit: BucketLimit): Promise<TakeResult> {
    const lease = this.spendable(key, limit, this.now());
    if (lease && lease.tokens > 0) {
      lease.tokens--;
      return { allowed: true };
    }
    const want = leaseSize(limit);
    // The caller's key in a hash tag of its own: on a cluster, buckets spread over the shards.
    const [taken, wait] = await (this.redis as unknown as TakeCommand).vitrineRateLimitTake(
      `${this.keyPrefix}ratelimit:{${key}}`,
      String(limit.ratePerSecond),
      String(limit.burst),
      String(want),
    );
    if (taken < 1) return { allowed: false, retryAfterSeconds: wait };
    if (taken > 1) this.keep(key, limit, taken - 1);
    return { allowed: true };
  }

  /** The key's lease, if still spendable at `now` under `limit` (the one it was taken under). */
  private spendable(key: string, limit: BucketLimit, now: number): Lease | undefined {
    const lease = this.leases.get(key);
    return lease && lease.until > now && lease.ratePerSecond === limit.ratePerSecond && lease.burst === limit.burst ? lease : undefined;
  }

  /** Keeps `tokens` more for the key's next calls (concurrent calls may each have taken some). */
  private keep(key: string, limit: BucketLimit, tokens: number): void {
    const now = this.now();
    const still = this.spendable(key, limit, now)?.tokens ?? 0;
    if (!this.leases.has(key) && this.leases.size >= LEASES_KEPT) {
      for (const [k, l] of this.leases) if (l.until <= now) this.leases.delete(k);
      if (this.leases.size >= LEASES_KEPT) this.leases.clear();
    }
    this.leases.set(key, { ratePerSecond: limit.ratePerSecond, burst: limit.burst, tokens: still + tokens, until: now + LEASE_MS });
  }
}
