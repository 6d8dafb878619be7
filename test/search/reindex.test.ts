// The vector index is a cache of MySQL: on a Redis 8 of its own (FLUSHALL is safe there), a lost index
// is rebuilt by the next search without re-embedding anything, the admin reindex route rebuilds it on
// demand, and queued changes whose Redis write never happened are applied by the sweeper.
import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedSentenceEncoder } from "../../src/embeddings/index.js";
import { indexQueue, productEmbeddings, products } from "../../src/storage/mysql/schema.js";
import { RedisVectorIndex } from "../../src/storage/redis/index.js";
import { startOwnRedis } from "../support/own-redis.js";
import type { OwnRedis } from "../support/own-redis.js";
import { flushAll, keysMatching } from "../support/redis-keys.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import {
  SUPER_BOOST,
  asIndexed,
  createCatalog,
  expectHits,
  ids,
  openText,
  postProducts,
  processProducts,
  productQuery,
  ranking,
  serve,
  storedMap,
  syntheticProducts,
  textQuery,
} from "../support/search-fixture.js";
import type { Hit, ProductSpec, Rank, Served } from "../support/search-fixture.js";
import { waitFor } from "../support/wait-for.js";

const SEARCHES: [string, number][] = [
  ["red dress", 0.5],
  ["black leather handbag", 1],
  ["white sneakers", 0.2],
  ["brown boots", 0.7],
  // Lexical matches: a misspelling, a prefix, a misspelt word on its own.
  ["blue denin jacket", 0.5],
  ["leather handb", 0.5],
  ["sneakres", 0.3],
];
const SUBJECTS = ["sku-3", "sku-40"];

let redis: OwnRedis | undefined;
let text: OpenedSentenceEncoder;
let s: Served;
let admin: RestClient;
let catalogId: string;
let specs: ProductSpec[];

beforeAll(async () => {
  // FLUSHALL below must only ever hit a server this file started.
  redis = await startOwnRedis();
  text = await openText();
  s = await serve({ ...redis.env, INDEX_SWEEP_MS: "200", INDEX_ORPHAN_SWEEP_MS: "1000" });
  admin = restClient(s.server.restUrl, s.server.adminKey);
  catalogId = await createCatalog(s, "reindexed");
  specs = syntheticProducts(text, 60, { seed: 31 });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
}, 300_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
  await redis?.stop();
});

const indexed = (ranks: Record<string, Rank> = {}) => asIndexed(specs, ranks);

const search = (query: string, w: number, topK = 20) =>
  s.api.post("/search", { organizationId: s.org, catalogId, query, topK, visual_weight: w, similarity_threshold: 0 });

/** Every search and recommendation of the test, as [ids, scores] the service answers now. */
async function answers(): Promise<[string, number][][]> {
  const out: [string, number][][] = [];
  for (const [query, w] of SEARCHES) {
    const res = await search(query, w);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(res.body.results.map((h: Hit) => [h.productId, h.score]));
  }
  for (const productId of SUBJECTS) {
    const res = await s.api.post("/recs", { organizationId: s.org, catalogId, productId, topK: 20 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(res.body.results.map((h: Hit) => [h.productId, h.score]));
  }
  return out;
}

const embeddingTimes = async () =>
  (
    await s.server.app.mysql.db
      .select({ productId: productEmbeddings.productId, updatedAt: productEmbeddings.updatedAt, modelVersion: productEmbeddings.modelVersion })
      .from(productEmbeddings)
      .where(eq(productEmbeddings.catalogId, catalogId))
  ).sort((a, b) => a.productId.localeCompare(b.productId));

const redisKeys = () => keysMatching(s.server.app.redis, `${s.server.config.redis.keyPrefix}*`);
const vectorsKey = async () => {
  const keys = (await redisKeys()).filter((k) => k.includes(catalogId) && k.endsWith(":vectors"));
  expect(keys).toHaveLength(1);
  return keys[0]!;
};

describe("a lost index", () => {
  let baseline: [string, number][][];

  it("answers exactly before anything is lost", async () => {
    const map = await storedMap(s, catalogId);
    baseline = await answers();
    SEARCHES.forEach(([query, w], i) => {
      const expected = ranking(map, indexed(), textQuery(text, query), w).filter((h) => h.score >= 0).slice(0, 20);
      expectHits(baseline[i]!.map(([productId, score]) => ({ productId, score })), expected, query);
    });
    SUBJECTS.forEach((subject, j) => {
      const e = specs.find((p) => p.id === subject)!.embeddings;
      const expected = ranking(map, indexed().filter((p) => p.id !== subject), productQuery(map, e), 1).slice(0, 20);
      expectHits(baseline[SEARCHES.length + j]!.map(([productId, score]) => ({ productId, score })), expected, subject);
    });
  });

  it("is rebuilt from MySQL by the very next search after FLUSHALL, with nothing re-embedded", async () => {
    const before = await embeddingTimes();
    expect(before).toHaveLength(specs.length);
    // Timestamps have second precision: a re-embedding now would show as a later one.
    await new Promise((r) => setTimeout(r, 1100));

    await flushAll(s.server.app.redis);
    // Nothing of the index; the orphan sweep (every second here) may have claimed its turn since.
    expect((await redisKeys()).filter((k) => !k.endsWith(":claim:orphan-sweep"))).toEqual([]);

    expect(await answers()).toEqual(baseline);
    expect((await redisKeys()).some((k) => k.includes(catalogId))).toBe(true);
    expect(await embeddingTimes()).toEqual(before);
    const statuses = await s.server.app.mysql.db.select({ status: products.status }).from(products).where(eq(products.catalogId, catalogId));
    expect(statuses.every((r) => r.status === "PROCESSED")).toBe(true);
  });

  it("is rebuilt by the admin reindex route, which answers {status: success, indexed: N, parts: 1}", async () => {
    const before = await embeddingTimes();
    // Drift the index away from MySQL behind the service's back: one product's element is lost.
    const missing = baseline[0]![0]![0];
    expect(Number(await s.server.app.redis.call("VREM", await vectorsKey(), missing))).toBe(1);
    expect(ids((await search(SEARCHES[0]![0], SEARCHES[0]![1])).body.results)).not.toContain(missing);

    const path = `/organizations/${s.org}/catalogs/${catalogId}/reindex`;
    const res = await admin.post(path, {});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: "success", message: expect.any(String), indexed: specs.length, parts: 1 });
    expect(Number(await s.server.app.redis.call("VCARD", await vectorsKey()))).toBe(specs.length);
    expect(await answers()).toEqual(baseline);
    expect(await embeddingTimes()).toEqual(before);
  });

  it("reindex: 403 for an organization's key, 404 for an unknown or deleted catalog, 400 for a malformed id", async () => {
    const path = `/organizations/${s.org}/catalogs/${catalogId}/reindex`;
    expectErrorObject(await s.api.post(path, {}), 403, "POST", path);

    const unknown = `/organizations/${s.org}/catalogs/${randomUUID()}/reindex`;
    expectErrorObject(await admin.post(unknown, {}), 404, "POST", unknown);
    // Another organization's view of this catalog: not found either.
    const elsewhere = `/organizations/${randomUUID()}/catalogs/${catalogId}/reindex`;
    expectErrorObject(await admin.post(elsewhere, {}), 404, "POST", elsewhere);
    const malformed = `/organizations/${s.org}/catalogs/not-a-uuid/reindex`;
    expectErrorObject(await admin.post(malformed, {}), 400, "POST", malformed);

    const doomed = await createCatalog(s, "doomed");
    expect((await s.api.delete(`/organizations/${s.org}/catalogs/${doomed}`)).status).toBe(200);
    const deleted = `/organizations/${s.org}/catalogs/${doomed}/reindex`;
    expectErrorObject(await admin.post(deleted, {}), 404, "POST", deleted);
  });
});

describe("the index sweeper", () => {
  it("applies a committed change whose Redis write never happened (a crash after commit)", async () => {
    const [query, w] = SEARCHES[2]!;
    const map = await storedMap(s, catalogId);
    const plain = ranking(map, indexed(), textQuery(text, query), w).filter((h) => h.score >= 0);
    const lifted = plain[12]!.productId;
    const { db } = s.server.app.mysql;

    // The change itself, committed without telling the index (no event, no queue row yet).
    await db.update(products).set({ rank: "SUPER_BOOST" }).where(and(eq(products.catalogId, catalogId), eq(products.id, lifted)));
    await new Promise((r) => setTimeout(r, 800)); // several sweeps
    expectHits((await search(query, w)).body.results, plain.slice(0, 20), "before the queue row");

    // The queue row the same transaction would have written.
    await db.insert(indexQueue).values({ catalogId, productId: lifted });
    const expected = ranking(map, indexed({ [lifted]: "SUPER_BOOST" }), textQuery(text, query), w).filter((h) => h.score >= 0).slice(0, 20);
    const started = Date.now();
    const results = await waitFor(
      async () => {
        const res = await search(query, w);
        const hit = res.body.results.find((h: Hit) => h.productId === lifted);
        return hit && Math.abs(hit.score - (plain[12]!.score + SUPER_BOOST)) < 1e-5 ? res.body.results : undefined;
      },
      3000,
      "the sweeper to apply the queued change",
    );
    expect(Date.now() - started).toBeLessThan(2500);
    expectHits(results, expected, "after the sweep");
    expect(results.find((h: Hit) => h.productId === lifted).metadata.rank).toBe("SUPER_BOOST");
    // The sweeper deletes the row after its Redis write, which a search can see first.
    const queued = () => db.select().from(indexQueue).where(eq(indexQueue.catalogId, catalogId));
    await waitFor(async () => ((await queued()).length === 0 ? true : undefined), 2000, "the sweeper to delete the queue row");
  });

  it("drops the index of a catalog that is gone but whose own drop never happened, within INDEX_ORPHAN_SWEEP_MS", async () => {
    const gone = randomUUID();
    const prefix = s.server.config.redis.keyPrefix;
    const client = s.server.app.redis;
    await client.hset(`${prefix}{${gone}}:meta`, "version", "left-behind");
    await client.hset(`${prefix}{${gone}}:lex:h1:docs`, "p1", "#s1 left behind");
    const left = () => keysMatching(client, `${prefix}{${gone}}*`);
    expect(await left()).toHaveLength(2);
    await waitFor(async () => ((await left()).length === 0 ? true : undefined), 5000, "the orphan sweep");
    // A live catalog keeps its index.
    expect((await keysMatching(client, `${prefix}{${catalogId}}*`)).length).toBeGreaterThan(0);
  });

  it("runs the orphan sweep in one process an interval among all those sharing the index", async () => {
    const client = s.server.app.redis;
    const options = { keyPrefix: `claims-${randomUUID()}:`, ef: 100 };
    const [one, other] = [new RedisVectorIndex(client, options), new RedisVectorIndex(client, options)];
    expect(await one.claimOrphanSweep(600)).toBe(true);
    expect(await other.claimOrphanSweep(600)).toBe(false);
    expect(await one.claimOrphanSweep(600)).toBe(false);
    await new Promise((r) => setTimeout(r, 800));
    expect(await other.claimOrphanSweep(600)).toBe(true);
    // Stopped (a shutdown), its scan of every key ends at the next page instead of being waited out.
    const served = new RedisVectorIndex(client, { keyPrefix: s.server.config.redis.keyPrefix, ef: 100 });
    await expect(served.catalogIds(AbortSignal.abort())).rejects.toThrow(/abort/i);
    expect(await served.catalogIds()).toContain(catalogId);
  });
});
