import type { IncomingMessage } from "node:http";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { transient } from "./errors.js";
import { pinnedLookup } from "./safe-lookup.js";
import type { ResolvedAddress } from "./safe-lookup.js";
import { hostOf } from "./url-policy.js";

export interface RequestOptions {
  connectTimeoutMs: number;
  userAgent: string;
  /** Aborting destroys the request with the signal's reason. */
  signal: AbortSignal;
}

/**
 * Sends one GET to `url`, connecting only to `addresses` (already validated), and resolves with
 * the response head; the body is left unread for the caller.
 */
export function openResponse(
  url: URL,
  addresses: readonly ResolvedAddress[],
  options: RequestOptions,
): Promise<IncomingMessage> {
  const { signal } = options;
  return new Promise<IncomingMessage>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const host = hostOf(url);
    const secure = url.protocol === "https:";
    const request = (secure ? https : http).request({
      protocol: url.protocol,
      // The real name, not the address: it becomes the Host header and the TLS server name and
      // is what the certificate is checked against; `lookup` maps it to the pinned addresses.
      hostname: host,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: "GET",
      headers: {
        "User-Agent": options.userAgent,
        Accept: "image/*",
        // Compressed bodies would make maxBytes meaningless (decompression bombs).
        "Accept-Encoding": "identity",
      },
      lookup: pinnedLookup(addresses),
      // A fresh socket per hop: a pooled one could have been opened for another, unchecked host,
      // and destroying it on abort must not hurt anyone else.
      agent: false,
      ...(secure && isIP(host) === 0 ? { servername: host } : {}),
    });

    let connectTimer: NodeJS.Timeout | undefined;
    const cleanup = () => {
      clearTimeout(connectTimer);
      signal.removeEventListener("abort", onAbort);
    };
    const onAbort = () => request.destroy(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });

    request.once("socket", (socket) => {
      if (!socket.connecting) return;
      connectTimer = setTimeout(() => {
        request.destroy(transient(`could not connect to ${host} within ${options.connectTimeoutMs} ms`));
      }, options.connectTimeoutMs);
      socket.once("connect", () => clearTimeout(connectTimer));
    });
    request.once("response", (response) => {
      cleanup();
      resolve(response);
    });
    // Kept for the request's whole life: a late socket error must not become an uncaught one.
    request.on("error", (error) => {
      cleanup();
      reject(error);
    });
    request.end();
  });
}
