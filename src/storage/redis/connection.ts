import { Cluster, Redis } from "ioredis";
import type { ClusterOptions, RedisOptions } from "ioredis";

/** One Redis server or a Redis Cluster: ioredis gives both the same command interface. */
export type RedisClient = Redis | Cluster;

/** Where the index lives: one server's URL, or a cluster's seed nodes. */
export interface RedisTarget {
  url?: string | undefined;
  clusterNodes?: { host: string; port: number }[] | undefined;
}

const CLIENT_OPTIONS: RedisOptions = {
  // While Redis is away commands fail at once (the RPC answers UNAVAILABLE with retry-after)
  // instead of queueing until a reconnect or a retry budget runs out, seconds later.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // Reconnect soon after Redis is back: every 100 ms, 200 ms, ... at most 1 s apart.
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  connectTimeout: 5000,
  commandTimeout: 30_000,
};

const CLUSTER_OPTIONS: ClusterOptions = {
  lazyConnect: true,
  redisOptions: CLIENT_OPTIONS,
  enableOfflineQueue: false,
  // The cluster client's own reconnects (its nodes' connections follow retryStrategy above).
  clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
};

/** Where a target is: the variable that names it and its address (a URL may hold a password: mask it before printing). */
export function describeRedisTarget(target: RedisTarget): { variable: string; address: string } {
  const nodes = target.clusterNodes;
  return nodes
    ? { variable: "REDIS_CLUSTER_NODES", address: nodes.map((n) => `${n.host}:${n.port}`).join(",") }
    : { variable: "REDIS_URL", address: target.url ?? "" };
}

/**
 * Connects and checks the server can hold vector sets (Redis >= 8), so a misconfigured REDIS_URL
 * or REDIS_CLUSTER_NODES fails at start-up with what to do, not at the first search. Every key of
 * a catalog shares one hash tag, so on a cluster a catalog's keys sit on one shard and its scripts,
 * pipelines and renames stay on one node.
 */
export async function openRedis(target: RedisTarget): Promise<RedisClient> {
  const nodes = target.clusterNodes;
  if (!nodes && !target.url) throw new Error("no Redis configured: set REDIS_URL or REDIS_CLUSTER_NODES");
  const { variable, address } = describeRedisTarget(target);
  const where = nodes ? `the Redis Cluster at ${address}` : `Redis at ${redactUrl(address)}`;
  const provisioned = nodes ? "" : ", or unset it to let the service start a Redis 8";
  const redis: RedisClient = nodes ? new Cluster(nodes, CLUSTER_OPTIONS) : new Redis(target.url!, { lazyConnect: true, ...CLIENT_OPTIONS });
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
      throw new Error(`${where} is version ${version} without vector sets: set ${variable} to Redis >= 8${nodes ? "" : ", or unset it to let the service start one"}`);
    }
    if (vcard) throw vcard;
  } catch (error) {
    redis.disconnect();
    redis.off("error", onStartError);
    throw error instanceof Error && /vector sets/.test(error.message)
      ? error
      : new Error(`cannot reach ${where}: ${(error as Error).message}. Check ${variable}${provisioned}`, { cause: lastError ?? error });
  }
  redis.off("error", onStartError);
  return redis;
}

/**
 * Runs `work` on every server that holds keys: the one server, or each master of a cluster (a key
 * scan or a FLUSHALL sees only the node it is sent to).
 */
export async function forEachPrimary<T>(redis: RedisClient, work: (node: Redis) => Promise<T>): Promise<T[]> {
  return Promise.all(redis instanceof Cluster ? redis.nodes("master").map(work) : [work(redis)]);
}

function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}
