import { Redis } from "ioredis";

/**
 * Connects and checks the server can hold vector sets (Redis >= 8), so a misconfigured REDIS_URL
 * fails at start-up with what to do, not at the first search.
 */
export async function openRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    // While Redis is away commands fail at once (the RPC answers UNAVAILABLE with retry-after)
    // instead of queueing until a reconnect or a retry budget runs out, seconds later.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Reconnect soon after Redis is back: every 100 ms, 200 ms, ... at most 1 s apart.
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    connectTimeout: 5000,
    commandTimeout: 30_000,
  });
  // Connection errors while starting are the reason for failing, not events to print.
  let lastError: Error | undefined;
  const onStartError = (error: Error) => (lastError = error);
  redis.on("error", onStartError);
  try {
    await redis.connect();
    const vcard = await redis.call("VCARD", "__vitrine_start_probe__").then(
      () => undefined,
      (error: Error) => error,
    );
    if (vcard && /unknown command/i.test(vcard.message)) {
      const version = /^redis_version:(\S+)/m.exec(await redis.info("server"))?.[1] ?? "unknown";
      throw new Error(`Redis at ${redactUrl(url)} is version ${version} without vector sets: set REDIS_URL to a Redis >= 8 server, or unset it to let the service start one`);
    }
  } catch (error) {
    redis.disconnect();
    redis.off("error", onStartError);
    throw error instanceof Error && /vector sets/.test(error.message)
      ? error
      : new Error(`cannot reach Redis at ${redactUrl(url)}: ${(error as Error).message}. Check REDIS_URL, or unset it to let the service start a Redis 8`, {
          cause: lastError ?? error,
        });
  }
  redis.off("error", onStartError);
  return redis;
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}
