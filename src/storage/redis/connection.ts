import { Cluster, Redis } from "ioredis";

/** One Redis server or a Redis Cluster: ioredis gives both the same command interface. */
export type RedisClient = Redis | Cluster;

/** Where the index lives: one server's URL, or a cluster's seed nodes. */
export interface RedisTarget {
  url?: string | undefined;
  clusterNodes?: { host: string; port: number }[] | undefined;
}

const CLIENT_OPTIONS = {
  // A request fails after a bounded wait instead of queueing forever while Redis is away.
  maxRetriesPerRequest: 2,
  connectTimeout: 5000,
  commandTimeout: 30_000,
};

/**
 * Connects and checks the server can hold vector sets (Redis >= 8), so a misconfigured REDIS_URL
 * or REDIS_CLUSTER_NODES fails at start-up with what to do, not at the first search. Every key of
 * a catalog shares one hash tag, so on a cluster a catalog's keys sit on one shard and its scripts,
 * pipelines and renames stay on one node.
 */
export async function openRedis(target: RedisTarget): Promise<RedisClient> {
  const nodes = target.clusterNodes;
  const where = nodes ? `the Redis Cluster at ${nodes.map((n) => `${n.host}:${n.port}`).join(",")}` : `Redis at ${redactUrl(target.url ?? "")}`;
  const variable = nodes ? "REDIS_CLUSTER_NODES" : "REDIS_URL";
  if (!nodes && !target.url) throw new Error("no Redis configured: set REDIS_URL or REDIS_CLUSTER_NODES");
  const redis: RedisClient = nodes
    ? new Cluster(nodes, { lazyConnect: true, redisOptions: CLIENT_OPTIONS, clusterRetryStrategy: (times) => (times > 3 ? null : 200 * times) })
    : new Redis(target.url!, { lazyConnect: true, ...CLIENT_OPTIONS });
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
    if (vcard && !/WRONGTYPE|no such key/i.test(vcard.message)) throw vcard;
  } catch (error) {
    redis.disconnect();
    throw error instanceof Error && /vector sets/.test(error.message)
      ? error
      : new Error(`cannot reach ${where}: ${(error as Error).message}. Check ${variable}${nodes ? "" : ", or unset it to let the service start a Redis 8"}`);
  }
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
