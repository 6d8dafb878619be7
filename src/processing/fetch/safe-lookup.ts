import { lookup } from "node:dns/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
import type { LookupFunction } from "node:net";
import { nonPublicReason } from "./address-policy.js";
import { fromNetworkError, permanent } from "./errors.js";
import { hostOf } from "./url-policy.js";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves the URL's host and returns its addresses, refusing the host if ANY of them is not
 * public: an attacker controlling DNS could otherwise mix a public and a private answer and let
 * connection-time address selection pick the private one.
 */
export async function resolvePermittedAddresses(
  url: URL,
  allowPrivateAddresses: boolean,
  signal?: AbortSignal,
): Promise<ResolvedAddress[]> {
  const host = hostOf(url);
  const literal = isIP(host);
  const addresses: ResolvedAddress[] =
    literal === 4 || literal === 6 ? [{ address: host, family: literal }] : await resolve(host, signal);

  if (!allowPrivateAddresses) {
    for (const { address } of addresses) {
      const reason = nonPublicReason(address);
      if (reason === null) continue;
      // The address itself is not echoed for hostnames: it would tell a prober what internal
      // names resolve to.
      throw literal
        ? permanent(`image URL points to a non-public address (${reason})`)
        : permanent(`image host ${host} resolves to a non-public address (${reason})`);
    }
  }
  return addresses;
}

async function resolve(host: string, signal?: AbortSignal): Promise<ResolvedAddress[]> {
  signal?.throwIfAborted();
  // dns.lookup cannot be cancelled; racing it against the signal at least frees the caller.
  let found: LookupAddress[];
  try {
    found = await raceAbort(lookup(host, { all: true, verbatim: true }), signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw fromNetworkError(error, host);
  }
  const addresses = found.flatMap(({ address, family }): ResolvedAddress[] =>
    family === 4 || family === 6 ? [{ address, family }] : [],
  );
  if (addresses.length === 0) throw permanent(`host not found: ${host}`);
  return addresses;
}

function raceAbort<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolvePromise(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A `lookup` for http.request that answers with the addresses already validated, whatever name
 * it is asked about, so a second DNS answer (DNS rebinding) can never be what we connect to.
 * Node asks with `all: true` when it races IPv4 and IPv6 (autoSelectFamily), else for one.
 */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname: string, options: LookupOptions, callback) => {
    const wanted = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
    const usable = addresses.filter((a) => wanted === 0 || a.family === wanted);
    const first = usable[0];
    if (first === undefined) {
      const error: NodeJS.ErrnoException = new Error(`no IPv${wanted} address for the image host`);
      error.code = "ENOTFOUND";
      callback(error, "", undefined);
      return;
    }
    if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
    else callback(null, first.address, first.family);
  };
}
