// One catalog split over several sets (README "One catalog over several shards"): the answers of a
// split index are the answers of one set (searches with lexical words, recommendations, filters on
// both filter paths, boosts, thresholds); writes go to the part a product hashes to; a re-split
// never interrupts searches; a part that loses its data is rebuilt by the next search. Runs on one
// Redis and, in the "cluster" project, on a 3-master Redis Cluster, where the parts land on
// different slots.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedSentenceEncoder } from "../../src/embeddings/index.js";
import { forEachPrimary } from "../../src/storage/redis/index.js";
import { keysMatching } from "../support/redis-keys.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import {
  asIndexed,
  createCatalog,
  expectHits,
  ids,
  openText,
  postProducts,
  processProducts,
  productQuery,
  productsPath,
  ranking,
  serve,
  storedMap,
  syntheticProducts,
  textQuery,
} from "../support/search-fixture.js";
import type { Hit, ProductSpec, Rank, Served } from "../support/search-fixture.js";

/** Products per set a rebuild aims at when not told: this catalog's 150 make 2 sets. */
const PART_SIZE = 100;
const SECTIONS = ["tops", "shoes", "bags", "coats", "hats"];

const SEARCHES: [string, number][] = [
  ["red dress", 0.5],
  ["black leather handbag", 1],
  ["white sneakers", 0.2],
  // Lexical matches: a misspelling, a prefix, a word every sixth product holds typed alone.
  ["blue denin jacket", 0.5],
  ["leather handb", 0.5],
  ["boots", 0.05],
];
/** Filters of both paths: a few candidates scored exactly (postings), and a range pushed down. */
const FILTERS: unknown[][] = [
  [{ field: "section", operator: "eq", value: "hats" }, { field: "n", operator: "lt", value: 120 }],
  [{ field: "n", operator: "gte", value: 30 }],
  [{ field: "section", operator: "in", value: ["tops", "bags"] }],
];
const SUBJECTS = ["sku-3", "sku-77"];
const RANKS: Record<string, Rank> = { "sku-10": "SUPER_BOOST", "sku-41": "BOOST", "sku-99": "BOOST" };

let text: OpenedSentenceEncoder;
let s: Served;
let admin: RestClient;
let catalogId: string;
let specs: ProductSpec[];

beforeAll(async () => {
  text = await openText();
  // HNSW, not exact scans, from 40 elements a set; postings on, so eq/in filters take their path.
  s = await serve({ SEARCH_PART_SIZE: String(PART_SIZE), SEARCH_EXACT_UP_TO: "40", SEARCH_FILTER_POSTINGS: "on" });
  admin = restClient(s.server.restUrl, s.server.adminKey);
  catalogId = await createCatalog(s, "split");
  specs = syntheticProducts(text, 150, { seed: 77, metadataOf: (i) => ({ section: SECTIONS[i % 5]!, n: i }) });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
  for (const [id, rank] of Object.entries(RANKS)) expect((await s.api.put(`${productsPath(s, catalogId)}/${id}/rank`, { rank })).status).toBe(200);
}, 300_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
});

const reindexPath = () => `/organizations/${s.org}/catalogs/${catalogId}/reindex`;

async function reindex(body: Record<string, unknown>): Promise<{ indexed: number; parts: number }> {
  const res = await admin.post(reindexPath(), body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The catalog's vector sets now: their keys and sizes. */
async function vectorSets(): Promise<{ key: string; size: number }[]> {
  const keys = (await keysMatching(s.server.app.redis, `${s.server.config.redis.keyPrefix}*`)).filter((k) => k.includes(catalogId) && k.endsWith(":vectors"));
  return Promise.all(keys.map(async (key) => ({ key, size: Number(await s.server.app.redis.call("VCARD", key)) })));
}

/** Every search (plain and filtered) and recommendation of the test, as the service answers now. */
async function answers(): Promise<[string, number][][]> {
  const out: [string, number][][] = [];
  const asked: Promise<{ status: number; body: { results: Hit[] } }>[] = [];
  for (const [query, w] of SEARCHES) asked.push(s.api.post("/search", { organizationId: s.org, catalogId, query, topK: 20, visual_weight: w, similarity_threshold: 0 }));
  for (const filters of FILTERS) asked.push(s.api.post("/search", { organizationId: s.org, catalogId, query: "red dress", topK: 10, visual_weight: 0.5, similarity_threshold: 0, filters }));
  asked.push(s.api.post("/search", { organizationId: s.org, catalogId, query: "white sneakers", topK: 30, visual_weight: 0.5, similarity_threshold: 0.3 }));
  for (const productId of SUBJECTS) asked.push(s.api.post("/recs", { organizationId: s.org, catalogId, productId, topK: 20 }));
  for (const res of await Promise.all(asked)) {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(res.body.results.map((h) => [h.productId, Math.round(h.score * 1e6) / 1e6]));
  }
  return out;
}

describe("a catalog split into parts", () => {
  let baseline: [string, number][][];

  it("as one set, answers by the documented score", async () => {
    expect(await reindex({ parts: 1 })).toEqual({ status: "success", message: expect.any(String), indexed: 150, parts: 1 });
    expect((await vectorSets()).map((v) => v.size)).toEqual([150]);
    baseline = await answers();
    const map = await storedMap(s, catalogId);
    SEARCHES.forEach(([query, w], i) => {
      const expected = ranking(map, asIndexed(specs, RANKS), textQuery(text, query), w).filter((h) => h.score >= 0).slice(0, 20);
      expectHits(baseline[i]!.map(([productId, score]) => ({ productId, score })), expected, query);
    });
    const subject = specs.find((p) => p.id === SUBJECTS[0])!;
    const recs = ranking(map, asIndexed(specs, RANKS).filter((p) => p.id !== subject.id), productQuery(map, subject.embeddings), 1).slice(0, 20);
    expectHits(baseline[SEARCHES.length + FILTERS.length + 1]!.map(([productId, score]) => ({ productId, score })), recs, subject.id);
    // Every answer is a full one: the comparisons below are not of empty lists.
    for (const answer of baseline) expect(answer.length).toBeGreaterThan(3);
  });

  it("split into 3 sets on 3 slots, gives the same answers", async () => {
    expect(await reindex({ parts: 3 })).toEqual({ status: "success", message: "search index rebuilt with 150 products in 3 parts", indexed: 150, parts: 3 });
    const sets = await vectorSets();
    expect(sets).toHaveLength(3);
    expect(sets.reduce((n, v) => n + v.size, 0)).toBe(150);
    for (const set of sets) expect(set.size).toBeGreaterThan(20);
    expect(new Set(sets.map((v) => slotOf(v.key))).size).toBe(3);
    expect(await answers()).toEqual(baseline);
  });

  it("keeps its split through a rebuild that does not ask for one, and undoes it when asked", async () => {
    expect((await reindex({})).parts).toBe(3);
    expect(await answers()).toEqual(baseline);
    expect((await reindex({ parts: 1 })).parts).toBe(1);
    expect((await vectorSets()).map((v) => v.size)).toEqual([150]);
    expect(await answers()).toEqual(baseline);
    // As its size needs: 150 products, SEARCH_PART_SIZE 100.
    expect((await reindex({})).parts).toBe(2);
    expect(await vectorSets()).toHaveLength(2);
    expect(await answers()).toEqual(baseline);
  });

  it("never fails a search while it is split again", { timeout: 120_000 }, async () => {
    let stop = false;
    let searches = 0;
    // Settled at once (no unhandled rejection while the reindexing goes on); rethrown below.
    const searching = (async () => {
      while (!stop) {
        expect(await answers()).toEqual(baseline);
        searches++;
      }
    })().then(
      () => undefined,
      (error: unknown) => error,
    );
    for (const parts of [3, 1, 4, 2]) expect((await reindex({ parts })).parts).toBe(parts);
    stop = true;
    const failure = await searching;
    if (failure) throw failure;
    expect(searches).toBeGreaterThan(2);
    // Only the last split's sets are left.
    expect(await vectorSets()).toHaveLength(2);
  });

  it("refuses a split it cannot make with a 400, and changes nothing", async () => {
    for (const parts of [0, 65, 2.5, -1, "three"]) {
      expectErrorObject(await admin.post(reindexPath(), { parts }), 400, "POST", reindexPath());
    }
    expect(await vectorSets()).toHaveLength(2);
    expect(await answers()).toEqual(baseline);
  });

  it("writes each new, changed or deleted product to its own part, found by the very next search", async () => {
    expect((await reindex({ parts: 3 })).parts).toBe(3);
    const added = syntheticProducts(text, 6, { seed: 78, idOf: (i) => `new-${i}`, metadataOf: (i) => ({ section: "hats", n: 500 + i }) }).map((p, i) => ({
      ...p,
      // A word no product had: each part that receives one adds it to its own vocabulary.
      descriptor: `zanzibar ${p.descriptor}`,
      embeddings: { ...p.embeddings, text: text.encode(`zanzibar ${p.descriptor}`) },
      id: `new-${i}`,
    }));
    await postProducts(s, catalogId, added);
    await processProducts(s, added);
    const sets = await vectorSets();
    const places = await Promise.all(added.map((p) => setsHolding(sets, p.id)));
    for (const place of places) expect(place).toHaveLength(1);
    // 6 products over 3 parts: more than one part received some.
    expect(new Set(places.flat()).size).toBeGreaterThan(1);

    const map = await storedMap(s, catalogId);
    const expectZanzibar = async (ranks: Record<string, Rank>, present: readonly ProductSpec[], what: string) => {
      for (const [query, w] of [["zanzibar", 0.05], ["zanzibar hats", 0.5]] as const) {
        const res = await s.api.post("/search", { organizationId: s.org, catalogId, query, topK: 15, visual_weight: w, similarity_threshold: 0 });
        expect(res.status).toBe(200);
        const expected = ranking(map, asIndexed([...specs, ...present], { ...RANKS, ...ranks }), textQuery(text, query), w).filter((h) => h.score >= 0).slice(0, 15);
        expectHits(res.body.results, expected, `${query}, ${what}`);
        // The new word's holders lead a search for it.
        expect(ids(res.body.results.slice(0, present.length)).sort(), `${query}, ${what}`).toEqual(present.map((p) => p.id).sort());
      }
    };
    await expectZanzibar({}, added, "added");

    const gone = added[0]!.id;
    expect((await s.api.delete(`${productsPath(s, catalogId)}/${gone}`)).status).toBe(200);
    expect((await s.api.put(`${productsPath(s, catalogId)}/${added[1]!.id}/rank`, { rank: "SUPER_BOOST" })).status).toBe(200);
    await expectZanzibar({ [added[1]!.id]: "SUPER_BOOST" }, added.slice(1), "one deleted, one boosted");
  });

  it("is rebuilt by the next search when one part loses its data", async () => {
    const before = await answers();
    const [lost] = await vectorSets();
    const tag = /\{[^}]+\}/.exec(lost!.key)![0];
    // As a shard restarted without persistence would: every key of that part.
    const keys = await keysMatching(s.server.app.redis, `*${tag}*`);
    expect(keys.length).toBeGreaterThan(2);
    await forEachPrimary(s.server.app.redis, async (node) => {
      const here = await node.keys(`*${tag}*`);
      if (here.length > 0) await node.del(...here);
    });
    expect(await answers()).toEqual(before);
    const sets = await vectorSets();
    expect(sets).toHaveLength(3);
    expect(sets.reduce((n, v) => n + v.size, 0)).toBe(155);
  });
});

/** Which of the sets hold the product's element. */
async function setsHolding(sets: readonly { key: string }[], productId: string): Promise<number[]> {
  const member = await Promise.all(sets.map(async (v) => Number(await s.server.app.redis.call("VISMEMBER", v.key, productId)) === 1));
  return sets.map((_, k) => k).filter((k) => member[k]);
}

/** A key's Redis Cluster slot (CRC16 of its hash tag), on one server as on a cluster. */
function slotOf(key: string): number {
  const open = key.indexOf("{");
  const close = key.indexOf("}", open + 1);
  const hashed = open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(Buffer.from(hashed)) % 16384;
}

function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
