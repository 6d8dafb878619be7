// HNSW's M (SEARCH_HNSW_M; src/search/hnsw-links.ts chooses it, src/storage/redis/slot-index.ts
// keeps it) on the run's real Redis (one server, or the cluster in the "cluster" project). Redis
// makes a vector set with the M of its first VADD and refuses every later VADD that asks another, a
// missing M counting as its default 16. So each build keeps the M it was begun with: processes
// configured otherwise (a deploy that changed it, two API processes mid-rollout) keep writing to
// it, its value sets included, and a new M takes effect at each catalog's next rebuild, split or
// not. By default ("auto") a rebuild chooses it by the size each set is built for.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/catalogs/index.js";
import { loadConfig } from "../../src/config/index.js";
import type { IndexEntry } from "../../src/search/index.js";
import { openRedis, RedisVectorIndex, type RedisClient } from "../../src/storage/redis/index.js";
import { deleteKeys, keysMatching } from "../support/redis-keys.js";
import { redisEnv } from "../support/test-server.js";
import { randomUnit, seededRandom } from "../support/random.js";
import { asIndexed, createCatalog, expectHits, openText, postProducts, processProducts, ranking, serve, storedMap, syntheticProducts, textQuery } from "../support/search-fixture.js";
import { pages } from "../support/index-pages.js";
import { restClient } from "../support/rest-client.js";
import { vsimsDuring } from "../support/redis-monitor.js";

const DIM = 16;
const VERSION = "hnsw-m-test|v1|";
const random = seededRandom(23);
const prefix = `vitrine-hnsw-m-${randomBytes(4).toString("hex")}:`;
let redis: RedisClient;

function attributesOf(i: number): JsonObject {
  return { section: `s${i % 3}`, rank: "NO_BOOST" };
}

/** `count` entries from p<from>; more than one write pipeline (500) when count is past it. */
function entries(from: number, count: number): IndexEntry[] {
  return Array.from({ length: count }, (_, k) => ({ productId: `p${from + k}`, vector: randomUnit(random, DIM), attributes: attributesOf(from + k), words: [`w${(from + k) % 7}`] }));
}

/** An index as a process would open it; each rebuild names its M (none: Redis's default). */
function openIndex(): RedisVectorIndex {
  return new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true, valueSetFields: ["section"] });
}

/** The M Redis built each of the catalog's vector sets with (its sets, its parts' sets, their value sets). */
async function setMs(catalogId: string, keyPrefix = prefix): Promise<{ sets: number; values: number; ms: number[] }> {
  const keys = await keysMatching(redis, `${keyPrefix}{${catalogId}*`);
  const vectors = keys.filter((k) => k.endsWith("}:vectors"));
  const values = keys.filter((k) => k.includes(":fv:"));
  const ms = await Promise.all([...vectors, ...values].map(async (key) => hnswM(await redis.call("VINFO", key))));
  return { sets: vectors.length, values: values.length, ms: [...new Set(ms)] };
}

function hnswM(vinfo: unknown): number {
  const fields = (vinfo as unknown[]).map(String);
  return Number(fields[fields.indexOf("hnsw-m") + 1]);
}

/** The EF of each VSIM the catalog's sets (its parts' too) ran during a search that answered 200. */
async function searchedEfs(client: RedisClient, catalogId: string, search: () => Promise<{ status: number }>): Promise<number[]> {
  const ran = await vsimsDuring(client, (key) => key.includes(catalogId) && key.endsWith(":vectors"), async () => {
    expect((await search()).status).toBe(200);
  });
  return ran.map(({ args }) => Number(args[args.indexOf("EF") + 1]));
}

/** Whether the index finds each product by its own vector, as its best hit. */
async function findsEach(index: RedisVectorIndex, catalogId: string, list: readonly IndexEntry[]): Promise<void> {
  for (const e of list) {
    const answer = await index.query(catalogId, { vector: e.vector, count: 1, filters: [], exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.hits[0]?.productId).toBe(e.productId);
  }
}

beforeAll(async () => {
  const config = loadConfig({ ...redisEnv(), REDIS_KEY_PREFIX: prefix });
  redis = await openRedis({ url: config.redis.url, clusterNodes: config.redis.clusterNodes });
});

afterAll(async () => {
  await deleteKeys(redis, await keysMatching(redis, `${prefix}*`));
  redis?.disconnect();
});

describe("HNSW's M", () => {
  it("is each build's own: writes from any process keep to it, and a rebuild takes the one it names", async () => {
    const catalogId = `m-${randomBytes(4).toString("hex")}`;
    const writer = openIndex();
    const other = openIndex();
    const first = entries(0, 1200);
    await writer.rebuild(catalogId, VERSION, pages(first));
    expect(await setMs(catalogId)).toEqual({ sets: 1, values: 3, ms: [16] });

    // Three write pipelines and value sets, from another process.
    const added = entries(5000, 1100);
    await other.upsert(catalogId, added);
    expect(await setMs(catalogId)).toEqual({ sets: 1, values: 3, ms: [16] });
    await findsEach(other, catalogId, added.slice(0, 20));

    await other.rebuild(catalogId, VERSION, pages([...first, ...added]), { m: 32 });
    expect(await setMs(catalogId)).toEqual({ sets: 1, values: 3, ms: [32] });
    // And the other way: the first process, which built with 16, writes with 32 now.
    const late = entries(9000, 600);
    await writer.upsert(catalogId, late);
    expect(await setMs(catalogId)).toEqual({ sets: 1, values: 3, ms: [32] });
    await findsEach(writer, catalogId, late.slice(0, 20));
    await writer.drop(catalogId);
  });

  it("takes Redis's default for a build from before builds recorded their M", async () => {
    const catalogId = `m-${randomBytes(4).toString("hex")}`;
    const index = openIndex();
    await index.rebuild(catalogId, VERSION, pages(entries(0, 300)));
    // As such a build's meta reads: no m.
    expect(await redis.hdel(`${prefix}{${catalogId}}:meta`, "m")).toBe(1);
    const added = entries(300, 50);
    await index.upsert(catalogId, added);
    expect(await setMs(catalogId)).toEqual({ sets: 1, values: 3, ms: [16] });
    await findsEach(index, catalogId, added.slice(0, 10));
    await index.drop(catalogId);
  });

  it("is each part's own in a split catalog, and a set made again after an empty build keeps the build's", async () => {
    const catalogId = `m-${randomBytes(4).toString("hex")}`;
    const wide = openIndex();
    const list = entries(0, 900);
    await wide.rebuild(catalogId, VERSION, pages(list), { parts: 3, m: 24 });
    expect(await setMs(catalogId)).toEqual({ sets: 3, values: 9, ms: [24] });
    const added = entries(2000, 200);
    await openIndex().upsert(catalogId, added);
    expect(await setMs(catalogId)).toEqual({ sets: 3, values: 9, ms: [24] });
    await findsEach(wide, catalogId, added.slice(0, 10));

    // An empty build leaves no set; the first write after it makes one with that build's M.
    await wide.rebuild(catalogId, VERSION, pages([]), { m: 24 });
    expect(await setMs(catalogId)).toEqual({ sets: 0, values: 0, ms: [] });
    const fresh = entries(4000, 10);
    await openIndex().upsert(catalogId, fresh);
    expect((await setMs(catalogId)).ms).toEqual([24]);
    await openIndex().upsert(catalogId, entries(4100, 10));
    await findsEach(wide, catalogId, fresh);
    await wide.drop(catalogId);
  });
});

describe("SEARCH_HNSW_M in the service", () => {
  it("builds a catalog's index with it, and answers by the documented score", { timeout: 300_000 }, async () => {
    const text = await openText();
    // HNSW, not an exact scan, from 10 products.
    const s = await serve({ SEARCH_HNSW_M: "20", SEARCH_EXACT_UP_TO: "10" });
    try {
      const catalogId = await createCatalog(s, "hnsw-m");
      const specs = syntheticProducts(text, 40, { seed: 5 });
      await postProducts(s, catalogId, specs);
      await processProducts(s, specs);
      const query = "red dress";
      const res = await s.api.post("/search", { organizationId: s.org, catalogId, query, topK: 10, visual_weight: 0.5, similarity_threshold: 0 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const expected = ranking(await storedMap(s, catalogId), asIndexed(specs), textQuery(text, query), 0.5).filter((h) => h.score >= 0).slice(0, 10);
      expect(expected.length).toBe(10);
      expectHits(res.body.results, expected, query);
      const keys = await keysMatching(s.server.app.redis, `${s.server.config.redis.keyPrefix}{${catalogId}}:vectors`);
      expect(keys.length).toBe(1);
      expect(hnswM(await s.server.app.redis.call("VINFO", keys[0]!))).toBe(20);
    } finally {
      await s.server.close();
      await text.close();
    }
  });

  it("by default chooses 32 for a set built for more than SEARCH_HNSW_M_LARGE_FROM products, 16 for smaller sets", { timeout: 300_000 }, async () => {
    const text = await openText();
    // The default's rule at a size a test can build: 40 products in one set are a large set.
    const s = await serve({ SEARCH_HNSW_M_LARGE_FROM: "30", SEARCH_EXACT_UP_TO: "10" });
    try {
      expect(s.server.config.search.hnswM).toBe("auto");
      const catalogId = await createCatalog(s, "hnsw-m-auto");
      const specs = syntheticProducts(text, 40, { seed: 6 });
      await postProducts(s, catalogId, specs);
      await processProducts(s, specs);
      const query = "blue shirt";
      const search = () => s.api.post("/search", { organizationId: s.org, catalogId, query, topK: 10, visual_weight: 0.5, similarity_threshold: 0 });
      const expected = ranking(await storedMap(s, catalogId), asIndexed(specs), textQuery(text, query), 0.5).filter((h) => h.score >= 0).slice(0, 10);
      expect(expected.length).toBe(10);
      const first = await search();
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expectHits(first.body.results, expected, query);
      expect(await setMs(catalogId, s.server.config.redis.keyPrefix)).toMatchObject({ sets: 1, ms: [32] });
      // And searches such a set deeper: SEARCH_EF_LARGE (1,000 by default) where a smaller set gets SEARCH_EF (250).
      const { ef, efLarge } = s.server.config.search;
      expect([ef, efLarge]).toEqual([250, 1000]);
      expect(await searchedEfs(s.server.app.redis, catalogId, search)).toEqual([efLarge]);

      // Split in two: 20 products a set, at most the threshold.
      const admin = restClient(s.server.restUrl, s.server.adminKey);
      const res = await admin.post(`/organizations/${s.org}/catalogs/${catalogId}/reindex`, { parts: 2 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ indexed: 40, parts: 2 });
      expect(await setMs(catalogId, s.server.config.redis.keyPrefix)).toMatchObject({ sets: 2, ms: [16] });
      const again = await search();
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expectHits(again.body.results, expected, query);
      expect(await searchedEfs(s.server.app.redis, catalogId, search)).toEqual([ef, ef]);
    } finally {
      await s.server.close();
      await text.close();
    }
  });
});
