import { Code, ConnectError } from "@connectrpc/connect";
import type { Interceptor } from "@connectrpc/connect";
import type { RateLimitConfig } from "../config/index.js";
import { principalKey } from "../rpc/principal-context.js";
import { clientAddressKey, doorKey } from "./call-context.js";
import type { Door } from "./call-context.js";
import { TokenBuckets } from "./token-bucket.js";
import type { BucketLimit, RateLimitBuckets, TakeResult } from "./token-bucket.js";

/** The header (gRPC trailer) that says when to try again; the REST gateway turns it into the HTTP header. */
export const RETRY_AFTER = "retry-after";

/**
 * Per-caller rate limit for every RPC on every door. Placed after authentication, so the bucket is
 * the API key's (the admin key has one too); calls that need no key (health, reflection) are
 * limited per client address. A key created with its own `rateLimitPerSecond` gets that rate
 * (bursts of twice as many; 0: no limit); every other caller gets the configured default
 * (`perSecond` 0: none). With `shared` (Redis), every API process takes from the same bucket.
 */
export function rateLimitInterceptor(
  config: RateLimitConfig,
  onLimited: (door: Door) => void = () => undefined,
  shared?: RateLimitBuckets,
  onStoreError: (error: unknown) => void = () => undefined,
): Interceptor {
  const fallback = config.perSecond > 0 ? { ratePerSecond: config.perSecond, burst: config.burst } : undefined;
  // Every take names its limit, so the buckets' own default never applies.
  const local = new TokenBuckets({ ratePerSecond: fallback?.ratePerSecond ?? 1, burst: fallback?.burst ?? 1 });
  // The shared store decides; while it cannot be reached, this process's own buckets do, so a
  // store outage neither blocks calls nor lifts the limit.
  const take = async (key: string, limit: BucketLimit): Promise<TakeResult> => {
    if (!shared) return local.take(key, limit);
    try {
      return await shared.take(key, limit);
    } catch (error) {
      onStoreError(error);
      return local.take(key, limit);
    }
  };
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    const own = principal?.kind === "organization" ? principal.rateLimitPerSecond : null;
    const limit = own === null ? fallback : own > 0 ? { ratePerSecond: own, burst: 2 * own } : undefined;
    if (limit === undefined) return next(req);
    const key =
      principal === undefined
        ? `address:${req.contextValues.get(clientAddressKey) ?? "in-process"}`
        : principal.kind === "admin"
          ? "admin"
          : `key:${principal.keyId}`;
    const taken = await take(key, limit);
    if (!taken.allowed) {
      onLimited(req.contextValues.get(doorKey));
      throw new ConnectError(
        `rate limit exceeded: at most ${limit.ratePerSecond} calls per second (bursts of ${limit.burst}) for this API key; retry in ${taken.retryAfterSeconds} s`,
        Code.ResourceExhausted,
        { [RETRY_AFTER]: String(taken.retryAfterSeconds) },
      );
    }
    return next(req);
  };
}
