// The vector index on Redis >= 8 vector sets (HNSW, cosine). Per catalog: one vector set of element
// vectors whose attributes are the products' filterable metadata, and one hash with the build
// version. Both keys share a hash tag, so a catalog lives on one Redis Cluster shard and the query
// script can touch both.
import { forEachPrimary } from "./connection.js";
import type { RedisClient } from "./connection.js";
import type { JsonObject } from "../../catalogs/index.js";
import type { IndexAnswer, IndexEntry, IndexQuery, VectorIndex } from "../../search/index.js";
import { redisAttributesJson, redisFilterExpression } from "./filter-expression.js";
import { QUERY_SCRIPT } from "./query-script.js";

export interface RedisVectorIndexOptions {
  /** Prepended to every key, e.g. "vitrine:"; lets several deployments or tests share a server. */
  keyPrefix: string;
  /** HNSW search breadth; raised to the requested count when that is larger. */
  ef: number;
}

const PIPELINE = 500;

export class RedisVectorIndex implements VectorIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisVectorIndexOptions,
  ) {
    redis.defineCommand("vitrineQuery", { numberOfKeys: 2, lua: QUERY_SCRIPT });
  }

  async query(catalogId: string, query: IndexQuery): Promise<IndexAnswer> {
    const filter = redisFilterExpression(query.filters) ?? "";
    const exactUpTo = Number.isFinite(query.exactUpTo) ? String(query.exactUpTo) : String(Number.MAX_SAFE_INTEGER);
    const ef = Math.max(this.options.ef, query.count);
    const reply = (await (this.redis as unknown as QueryCommand).vitrineQuery(
      this.vectorsKey(catalogId),
      this.metaKey(catalogId),
      query.expectedVersion,
      exactUpTo,
      fp32(query.vector),
      String(query.count),
      String(ef),
      filter,
      String(query.count * 100),
      query.servableVersionPrefix,
    )) as (string | number)[];
    if (reply[0] === "stale") return { kind: "stale", version: reply[1] === "" ? undefined : String(reply[1]) };
    const hits = [];
    for (let i = 4; i < reply.length; i += 3) {
      const attributes = reply[i + 2] === "" ? {} : (JSON.parse(String(reply[i + 2])) as JsonObject);
      hits.push({ productId: String(reply[i]), cosine: 2 * Number(reply[i + 1]) - 1, attributes });
    }
    return { kind: "ok", size: Number(reply[1]), exact: reply[2] === 1, current: reply[3] === 1, hits };
  }

  async upsert(catalogId: string, entries: readonly IndexEntry[]): Promise<void> {
    await this.add(this.vectorsKey(catalogId), entries);
  }

  async remove(catalogId: string, productIds: readonly string[]): Promise<void> {
    const key = this.vectorsKey(catalogId);
    for (let start = 0; start < productIds.length; start += PIPELINE) {
      const pipeline = this.redis.pipeline();
      for (const id of productIds.slice(start, start + PIPELINE)) pipeline.call("VREM", key, id);
      check(await pipeline.exec());
    }
  }

  async rebuild(catalogId: string, version: string, pages: AsyncIterable<readonly IndexEntry[]>): Promise<number> {
    // Built aside and renamed into place: readers see the old set until the new one is whole.
    const building = this.buildingKey(catalogId);
    await this.redis.del(building);
    let count = 0;
    for await (const page of pages) {
      await this.add(building, page);
      count += page.length;
    }
    const commit = this.redis.multi();
    if (count > 0) commit.rename(building, this.vectorsKey(catalogId));
    else commit.del(this.vectorsKey(catalogId));
    commit.hset(this.metaKey(catalogId), { version, builtAt: new Date().toISOString(), size: String(count) });
    check(await commit.exec());
    return count;
  }

  async version(catalogId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.metaKey(catalogId), "version")) ?? undefined;
  }

  async element(catalogId: string, productId: string): Promise<Float32Array | undefined> {
    // NOQUANT: VEMB gives back the float32 components times the stored norm.
    const reply = (await this.redis.call("VEMB", this.vectorsKey(catalogId), productId)) as string[] | null;
    return reply ? Float32Array.from(reply, Number) : undefined;
  }

  async drop(catalogId: string): Promise<void> {
    await this.redis.del(this.vectorsKey(catalogId), this.metaKey(catalogId), this.buildingKey(catalogId));
  }

  async catalogIds(): Promise<string[]> {
    const ids = new Set<string>();
    const pattern = `${escapeGlob(this.options.keyPrefix)}{*}:*`;
    await forEachPrimary(this.redis, async (node) => {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        for (const key of keys) {
          const id = /\{([^}]+)\}/.exec(key.slice(this.options.keyPrefix.length))?.[1];
          if (id) ids.add(id);
        }
      } while (cursor !== "0");
    });
    return [...ids];
  }

  /** Exposed for benchmarks and operators: the set's own memory use, in bytes. */
  async memoryUsage(catalogId: string): Promise<number> {
    return Number((await this.redis.call("MEMORY", "USAGE", this.vectorsKey(catalogId))) ?? 0);
  }

  private async add(key: string, entries: readonly IndexEntry[]): Promise<void> {
    for (let start = 0; start < entries.length; start += PIPELINE) {
      const pipeline = this.redis.pipeline();
      for (const e of entries.slice(start, start + PIPELINE)) {
        // NOQUANT: float32 elements keep scores exact (see README: search); every VADD must repeat it.
        pipeline.call("VADD", key, "FP32", fp32(e.vector), e.productId, "NOQUANT", "SETATTR", redisAttributesJson(e.attributes));
      }
      check(await pipeline.exec());
    }
  }

  private vectorsKey(catalogId: string): string {
    return `${this.options.keyPrefix}{${catalogId}}:vectors`;
  }

  private metaKey(catalogId: string): string {
    return `${this.options.keyPrefix}{${catalogId}}:meta`;
  }

  private buildingKey(catalogId: string): string {
    return `${this.options.keyPrefix}{${catalogId}}:building`;
  }
}

interface QueryCommand {
  vitrineQuery(...args: (string | Buffer)[]): Promise<unknown>;
}

/** Vector sets read FP32 blobs as little-endian floats. */
function fp32(vector: Float32Array): Buffer {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes;
}

function check(results: [Error | null, unknown][] | null): void {
  for (const [error] of results ?? []) if (error) throw error;
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
