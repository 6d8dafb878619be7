import { Code, ConnectError } from "@connectrpc/connect";
import type { Interceptor } from "@connectrpc/connect";
import type { RateLimitConfig } from "../config/index.js";
import { principalKey } from "../rpc/principal-context.js";
import { clientAddressKey, doorKey } from "./call-context.js";
import type { Door } from "./call-context.js";
import { TokenBuckets } from "./token-bucket.js";

/** The header (gRPC trailer) that says when to try again; the REST gateway turns it into the HTTP header. */
export const RETRY_AFTER = "retry-after";

/**
 * Per-caller rate limit for every RPC on every door. Placed after authentication, so the bucket is
 * the API key's (the admin key has one too); calls that need no key (the health service) are
 * limited per client address. Buckets live in this process: with several service processes behind
 * a balancer, a key may make up to that many times the configured rate. Undefined when disabled.
 */
export function rateLimitInterceptor(config: RateLimitConfig, onLimited: (door: Door) => void = () => undefined): Interceptor | undefined {
  if (config.perSecond === 0) return undefined;
  const buckets = new TokenBuckets({ ratePerSecond: config.perSecond, burst: config.burst });
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    const key =
      principal === undefined
        ? `address:${req.contextValues.get(clientAddressKey) ?? "in-process"}`
        : principal.kind === "admin"
          ? "admin"
          : `key:${principal.keyId}`;
    const taken = buckets.take(key);
    if (!taken.allowed) {
      onLimited(req.contextValues.get(doorKey));
      throw new ConnectError(
        `rate limit exceeded: at most ${config.perSecond} calls per second (bursts of ${config.burst}) per API key; retry in ${taken.retryAfterSeconds} s`,
        Code.ResourceExhausted,
        { [RETRY_AFTER]: String(taken.retryAfterSeconds) },
      );
    }
    return next(req);
  };
}
