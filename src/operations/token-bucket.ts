export interface TokenBucketOptions {
  /** Tokens added per second; the sustained rate. Must be > 0. */
  ratePerSecond: number;
  /** Bucket size: how many calls may arrive at once after a quiet spell. Must be >= 1. */
  burst: number;
  /** Buckets kept before full (idle) ones are dropped; bounds memory under many callers. */
  maxKeys?: number;
  /** Milliseconds clock; injectable for tests. */
  now?: () => number;
}

export type TakeResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Where the buckets live. In one process's memory (TokenBuckets) each process counts on its own;
 * a store shared by every API process (Redis: storage/redis/rate-limit-buckets.ts) makes the
 * limit a key's, whichever process a balancer sends its calls to.
 */
export interface RateLimitBuckets {
  take(key: string, limit: BucketLimit): Promise<TakeResult>;
}

/** A bucket's own rate and size, when a key has a limit other than the default. */
export interface BucketLimit {
  ratePerSecond: number;
  burst: number;
}

interface Bucket extends BucketLimit {
  tokens: number;
  updatedMs: number;
}

/**
 * One token bucket per key, in memory: a key starts with `burst` tokens, each call takes one,
 * and tokens come back at `ratePerSecond` up to `burst`. State is per process.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly limit: BucketLimit;
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(options: TokenBucketOptions) {
    checkLimit(options);
    this.limit = { ratePerSecond: options.ratePerSecond, burst: options.burst };
    this.maxKeys = options.maxKeys ?? 100_000;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Takes one token for `key`, or says in how many whole seconds (>= 1) one will be there. `limit`
   * replaces the default for this key; a changed limit starts the key's bucket afresh.
   */
  take(key: string, limit: BucketLimit = this.limit): TakeResult {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (bucket === undefined || bucket.ratePerSecond !== limit.ratePerSecond || bucket.burst !== limit.burst) {
      checkLimit(limit);
      if (bucket === undefined && this.buckets.size >= this.maxKeys) this.dropFullBuckets(now);
      bucket = { ...limit, tokens: limit.burst, updatedMs: now };
      this.buckets.set(key, bucket);
    } else {
      this.refill(bucket, now);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    const waitSeconds = (1 - bucket.tokens) / bucket.ratePerSecond;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitSeconds)) };
  }

  /** Buckets held now (for tests and the memory bound). */
  get size(): number {
    return this.buckets.size;
  }

  private refill(bucket: Bucket, now: number): void {
    const elapsedSeconds = Math.max(0, now - bucket.updatedMs) / 1000;
    bucket.tokens = Math.min(bucket.burst, bucket.tokens + elapsedSeconds * bucket.ratePerSecond);
    bucket.updatedMs = now;
  }

  // A full bucket holds no information: dropping it and starting a fresh one later is the same.
  // If every bucket is still refilling (a flood of distinct keys), the oldest go first.
  private dropFullBuckets(now: number): void {
    for (const [key, bucket] of this.buckets) {
      this.refill(bucket, now);
      if (bucket.tokens >= bucket.burst) this.buckets.delete(key);
    }
    const excess = this.buckets.size - Math.floor(this.maxKeys * 0.9);
    if (excess > 0) {
      let dropped = 0;
      for (const key of this.buckets.keys()) {
        if (dropped++ >= excess) break;
        this.buckets.delete(key);
      }
    }
  }
}

function checkLimit(limit: BucketLimit): void {
  if (!(limit.ratePerSecond > 0)) throw new Error("ratePerSecond must be > 0");
  if (!(limit.burst >= 1)) throw new Error("burst must be >= 1");
}
