// Search and recommendations against the real Redis 8 and MariaDB: the blended score against an
// exact computation, threshold, topK, boosts, recommendations, visibility, validation.
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSentenceEncoder, textImageMapFromBytes } from "../../src/embeddings/index.js";
import type { OpenedSentenceEncoder, TextImageMap } from "../../src/embeddings/index.js";
import { searchLog } from "../../src/storage/mysql/schema.js";
import { readMapBytes } from "../../src/storage/mysql/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { colourHistogram, completeWith, randomUnit, seededRandom } from "../support/synthetic-processing.js";
import type { SyntheticEmbeddings } from "../support/synthetic-processing.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { lexicalReference } from "../support/lexical-reference.js";
import { cosine } from "../support/vectors.js";

const BOOST = 0.05;
const SUPER_BOOST = 0.1;
const COLOUR_NAMES = ["black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown"];

let text: OpenedSentenceEncoder;
beforeAll(async () => {
  text = await openSentenceEncoder({ cacheDir });
}, 120_000);
afterAll(async () => {
  await text?.close();
});

interface Fixture {
  server: TestServer;
  api: RestClient;
  org: string;
  catalogId: string;
  embeddings: Map<string, SyntheticEmbeddings>;
  descriptors: Map<string, string>;
  map: TextImageMap;
}

const PRODUCTS = 60;
const words = ["red dress", "blue denim jacket", "black leather handbag", "white sneakers", "green summer top", "brown boots"];

async function fixture(env: Record<string, string>): Promise<Fixture> {
  const server = await startTestServer({ CACHE_DIR: cacheDir, SEARCH_BOOST: String(BOOST), SEARCH_SUPER_BOOST: String(SUPER_BOOST), ...env });
  const org = randomUUID();
  const api = restClient(server.restUrl, await server.createKey(org));
  const catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "shop" })).body.id as string;
  const random = seededRandom(7);
  const embeddings = new Map<string, SyntheticEmbeddings>();
  const descriptors = new Map<string, string>();
  const products = Array.from({ length: PRODUCTS }, (_, i) => {
    const id = `sku-${i}`;
    const descriptor = `${words[i % words.length]} ${i}`;
    descriptors.set(id, descriptor);
    embeddings.set(id, { image: randomUnit(random, 1280), colour: colourHistogram(random, i % 11), text: text.encode(descriptor) });
    return {
      id,
      imageUrl: `https://images.example/${id}.jpg`,
      descriptor,
      metadata: { colour: COLOUR_NAMES[i % 11]!, price: 10 + i, ...(i % 3 === 0 ? { tags: ["sale", `t${i % 4}`] } : {}) },
    };
  });
  expect((await api.post(`/organizations/${org}/catalogs/${catalogId}/products`, products)).status).toBe(202);
  await completeWith(server, embeddings);
  const bytes = await readMapBytes(server.app.mysql.db, catalogId);
  expect(bytes, "60 described products fit a text-image map").toBeDefined();
  return { server, api, org, catalogId, embeddings, descriptors, map: textImageMapFromBytes(bytes!) };
}

/**
 * The documented score, computed here from the stored embeddings and the catalog's map; with the
 * typed words of a search, the lexical similarity (no typed words: recommendations).
 */
function expectedScores(
  f: Fixture,
  query: { visual: Float32Array; text: Float32Array },
  w: number,
  ranks: Record<string, string> = {},
  typed?: string,
) {
  const lexical = typed === undefined ? new Map<string, number>() : lexicalReference(typed, f.descriptors);
  // A search's visual side: its word vector beside the stored map's prototypes of its words.
  const queryVisual = typed === undefined ? query.visual : f.map.queryVisual(typed, query.visual);
  // A query of unknown words has a zero vector: no meaning to compare, only letters.
  const meaningless = !query.text.some((x) => x !== 0);
  const similar = (a: Float32Array, b: Float32Array) => (meaningless ? 0 : cosine(a, b));
  return [...f.embeddings].filter(([id]) => !meaningless || (lexical.get(id) ?? -1) > -1).map(([id, e]) => {
    const visual = f.map.apply(e.image, e.colour);
    const boost = ranks[id] === "BOOST" ? BOOST : ranks[id] === "SUPER_BOOST" ? SUPER_BOOST : 0;
    const textSimilarity = Math.max(0.8 * similar(query.text, e.text), lexical.get(id) ?? -1);
    return { productId: id, score: w * similar(queryVisual, visual) + (1 - w) * textSimilarity + boost };
  }).sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : 1));
}

describe.each([
  { path: "exact scan (small catalog)", env: {} as Record<string, string> },
  { path: "HNSW (exact scans turned off)", env: { SEARCH_EXACT_UP_TO: "0" } },
])("search via $path", ({ env }) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture(env);
  }, 180_000);
  afterAll(async () => {
    await f?.server.close();
  });

  const search = (body: Record<string, unknown>) =>
    f.api.post("/search", { organizationId: f.org, catalogId: f.catalogId, similarity_threshold: 0, ...body });

  it("ranks by visual_weight * visual cosine + (1 - visual_weight) * max(0.8 * text cosine, lexical), as an exact computation does", async () => {
    // The stored map learnt prototypes of the descriptors' words: a query of them is moved, one of
    // words no descriptor has is not.
    const dress = text.encode("red dress");
    expect(cosine(f.map.queryVisual("red dress", dress), dress)).toBeLessThan(0.99);
    const other = text.encode("umbrella");
    expect(f.map.queryVisual("umbrella", other)).toBe(other);
    for (const query of ["red dress", "black leather handbag", "sneakers", "blue denin jacket", "handb", "snaekers 12"]) {
      for (const w of [1, 0.5, 0.2]) {
        const res = await search({ query, topK: 15, visual_weight: w });
        expect(res.status).toBe(200);
        expect(res.body.status).toBe("success");
        const q = text.encode(query);
        const expected = expectedScores(f, { visual: q, text: q }, w, {}, query).filter((e) => e.score >= 0).slice(0, 15);
        expect(res.body.results.map((r: { productId: string }) => r.productId)).toEqual(expected.map((e) => e.productId));
        res.body.results.forEach((r: { score: number }, i: number) => expect(r.score).toBeCloseTo(expected[i]!.score, 5));
      }
    }
  });

  it("returns metadata with the rank, and at most topK results, best first", async () => {
    const res = await search({ query: "blue denim jacket", topK: 5, visual_weight: 0.5 });
    expect(res.body.results).toHaveLength(5);
    const scores = res.body.results.map((r: { score: number }) => r.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const first = res.body.results[0];
    expect(Object.keys(first).sort()).toEqual(["metadata", "productId", "score"]);
    expect(first.metadata.rank).toBe("NO_BOOST");
    expect(first.metadata.colour).toEqual(expect.any(String));
  });

  it("drops results below similarity_threshold", async () => {
    const q = text.encode("red dress");
    const expected = expectedScores(f, { visual: q, text: q }, 0.3, {}, "red dress").filter((e) => e.score >= 0.35);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(PRODUCTS);
    const res = await search({ query: "red dress", topK: 100, visual_weight: 0.3, similarity_threshold: 0.35 });
    expect(res.body.results.map((r: { productId: string }) => r.productId)).toEqual(expected.map((e) => e.productId));
  });

  it("lifts BOOST and SUPER_BOOST products by the configured amounts, from the very next query", async () => {
    const q = text.encode("green summer top");
    const plain = expectedScores(f, { visual: q, text: q }, 0.5, {}, "green summer top");
    const boosted = plain[12]!.productId;
    const superBoosted = plain[20]!.productId;
    const base = `/organizations/${f.org}/catalogs/${f.catalogId}/products`;
    expect((await f.api.put(`${base}/${boosted}/rank`, { rank: "BOOST" })).status).toBe(200);
    expect((await f.api.put(`${base}/${superBoosted}/rank`, { rank: "SUPER_BOOST" })).status).toBe(200);
    try {
      const ranks = { [boosted]: "BOOST", [superBoosted]: "SUPER_BOOST" };
      const expected = expectedScores(f, { visual: q, text: q }, 0.5, ranks, "green summer top").slice(0, 25);
      const res = await search({ query: "green summer top", topK: 25, visual_weight: 0.5 });
      expect(res.body.results.map((r: { productId: string }) => r.productId)).toEqual(expected.map((e) => e.productId));
      const hit = (id: string) => res.body.results.find((r: { productId: string }) => r.productId === id);
      expect(hit(boosted).score).toBeCloseTo(plain[12]!.score + BOOST, 5);
      expect(hit(superBoosted).score).toBeCloseTo(plain[20]!.score + SUPER_BOOST, 5);
      expect(hit(boosted).metadata.rank).toBe("BOOST");
    } finally {
      await f.api.put(`${base}/${boosted}/rank`, { rank: "NO_BOOST" });
      await f.api.put(`${base}/${superBoosted}/rank`, { rank: "NO_BOOST" });
    }
    const after = await search({ query: "green summer top", topK: 25, visual_weight: 0.5 });
    expect(after.body.results.map((r: { productId: string }) => r.productId)).toEqual(plain.slice(0, 25).map((e) => e.productId));
  });

  it("recommends the products nearest to one, never itself, with the same score definition", async () => {
    const subject = "sku-4";
    const e = f.embeddings.get(subject)!;
    // A described subject is sought where its photo and its words meet: the mean of its mapped
    // photo and its descriptor's vector (README, "Search and recommendations").
    const photo = f.map.apply(e.image, e.colour);
    const blend = photo.map((v, i) => v + e.text[i]!);
    const norm = Math.hypot(...blend);
    const visual = blend.map((v) => v / norm);
    const photoOnly = expectedScores(f, { visual: photo, text: e.text }, 1).filter((x) => x.productId !== subject).slice(0, 10);
    expect(expectedScores(f, { visual, text: e.text }, 1).filter((x) => x.productId !== subject).slice(0, 10), "the descriptor changes the order").not.toEqual(photoOnly);
    for (const w of [undefined, 0.4]) {
      const res = await f.api.post("/recs", { organizationId: f.org, catalogId: f.catalogId, productId: subject, topK: 10, ...(w === undefined ? {} : { visualWeight: w }) });
      expect(res.status).toBe(200);
      const expected = expectedScores(f, { visual, text: e.text }, w ?? 1).filter((x) => x.productId !== subject).slice(0, 10);
      expect(res.body.results.map((r: { productId: string }) => r.productId)).toEqual(expected.map((x) => x.productId));
      res.body.results.forEach((r: { score: number; metadata: object }, i: number) => {
        expect(r.score).toBeCloseTo(expected[i]!.score, 5);
        expect(r.metadata).toEqual(expect.objectContaining({ rank: "NO_BOOST" }));
      });
    }
    const bare = await f.api.post("/recs", { organizationId: f.org, catalogId: f.catalogId, productId: subject, topK: 3, includeMetadata: false });
    expect(bare.body.results).toHaveLength(3);
    expect(bare.body.results.every((r: object) => !("metadata" in r))).toBe(true);
  });

  it("records the request and its user_analytics in the search log, never echoing them", async () => {
    const analytics = { session_id: `s-${randomUUID()}`, ip_address: "203.0.113.9", user_agent: "vitest" };
    const res = await search({ query: "white sneakers", topK: 3, visual_weight: 0.5, user_analytics: analytics });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain(analytics.session_id);
    await f.server.app.core.search.flushLog();
    const rows = await f.server.app.mysql.db.select().from(searchLog).where(eq(searchLog.sessionId, analytics.session_id));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: "search", query: "white sneakers", topK: 3, resultCount: 3, ipAddress: "203.0.113.9", userAgent: "vitest", catalogId: f.catalogId });
  });
});

describe("search requests", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture({});
  }, 180_000);
  afterAll(async () => {
    await f?.server.close();
  });
  const valid = () => ({ organizationId: f.org, catalogId: f.catalogId, query: "red dress", topK: 5, visual_weight: 0.5, similarity_threshold: 0 });

  it.each([
    ["no topK", { topK: undefined }, /topK is required/],
    ["topK 0", { topK: 0 }, /topK must be an integer from 1 to 500/],
    ["topK over the maximum", { topK: 501 }, /topK/],
    ["no visual_weight", { visual_weight: undefined }, /visual_weight is required/],
    ["visual_weight 0", { visual_weight: 0 }, /visual_weight must be greater than 0/],
    ["visual_weight above 1", { visual_weight: 1.5 }, /visual_weight/],
    ["no similarity_threshold", { similarity_threshold: undefined }, /similarity_threshold is required/],
    ["similarity_threshold below 0", { similarity_threshold: -0.1 }, /similarity_threshold must be between 0 and 1/],
    ["a blank query", { query: "   " }, /query is required/],
    ["an unknown operator", { filters: [{ field: "colour", operator: "like", value: "red" }] }, /filters\[0\]/],
    ["a wrongly typed filter value", { filters: [{ field: "price", operator: "gt", value: true }] }, /filters\[0\]\.value/],
    ["an over-long session id", { user_analytics: { session_id: "x".repeat(201) } }, /session_id/],
  ])("rejects %s with 400 in the Error object", async (_name, change, message) => {
    const res = await f.api.post("/search", { ...valid(), ...change });
    expectErrorObject(res, 400, "POST", "/search");
    expect(res.body.message).toMatch(message);
  });

  it("answers 404 for an unknown or deleted catalog, and 403 for another organization's", async () => {
    expectErrorObject(await f.api.post("/search", { ...valid(), catalogId: randomUUID() }), 404, "POST", "/search");
    const other = randomUUID();
    expectErrorObject(await f.api.post("/search", { ...valid(), organizationId: other }), 403, "POST", "/search");
    const otherApi = restClient(f.server.restUrl, await f.server.createKey(other));
    // The other organization's key, its own organizationId, this catalog: not found, not leaked.
    expectErrorObject(await otherApi.post("/search", { ...valid(), organizationId: other }), 404, "POST", "/search");
  });

  it("answers an empty list for a query of words it does not know that match no product's letters either", async () => {
    const res = await f.api.post("/search", { ...valid(), query: "qwxzzkv" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "success", results: [] });
  });

  it("answers 404 for recommendations of an unknown product and 400 for one without vectors yet", async () => {
    const recs = (productId: string) => f.api.post("/recs", { organizationId: f.org, catalogId: f.catalogId, productId, topK: 5 });
    expectErrorObject(await recs("no-such-sku"), 404, "POST", "/recs");
    expectErrorObject(await recs(""), 400, "POST", "/recs");
    await f.api.post(`/organizations/${f.org}/catalogs/${f.catalogId}/products`, [{ id: "fresh", imageUrl: "https://images.example/fresh.jpg", descriptor: "new" }]);
    const res = await recs("fresh");
    expectErrorObject(res, 400, "POST", "/recs");
    expect(res.body.message).toMatch(/no vectors yet \(status PROCESSING\)/);
  });
});
