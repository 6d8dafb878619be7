// Lexical matching against the real Redis 8 and MariaDB: exact words, misspellings, prefixes and
// words the word model does not know find their products with the documented score (computed here
// by brute force, see lexical-reference.ts); filters apply to them exactly; deletes, re-creations and
// rank changes show at once; a second API process sees words the first one's writes added.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { OpenedSentenceEncoder } from "../../src/embeddings/index.js";
import { createApiApp } from "../../src/apps/api/api-app.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { colourHistogram, randomUnit, seededRandom } from "../support/synthetic-processing.js";
import {
  BOOST,
  COLOUR_NAMES,
  createCatalog,
  expectHits,
  ids,
  openText,
  postProducts,
  processProducts,
  productsPath,
  ranking,
  serve,
  storedMap,
  textQuery,
} from "../support/search-fixture.js";
import type { Indexed, JsonRecord, ProductSpec, Served } from "../support/search-fixture.js";

const W = 0.5;
const ALL = 100;
const BRANDS = ["skechers", "reebok", "myntra", "converse", "fossil", "puma"];
const KINDS = ["running shoes", "sunglasses", "tshirt", "analog watch", "backpack", "track pants", "casual shoes", "cap"];
const GENDERS = ["men", "women"];

let text: OpenedSentenceEncoder;
let s: Served;
let catalogId: string;
let specs: ProductSpec[];
const indexed = new Map<string, Indexed>();

function product(i: number, brand: string, descriptor: string, random: () => number): ProductSpec {
  return {
    id: `sku-${i}`,
    descriptor,
    metadata: { brand, price: 10 + ((i * 7) % 90), colour: COLOUR_NAMES[i % 11]! },
    embeddings: { image: randomUnit(random, 1280), colour: colourHistogram(random, i % 11), text: text.encode(descriptor) },
  };
}

beforeAll(async () => {
  text = await openText();
  s = await serve();
  catalogId = await createCatalog(s, "brands");
  const random = seededRandom(11);
  specs = Array.from({ length: 48 }, (_, i) => {
    const brand = BRANDS[i % BRANDS.length]!;
    const descriptor = `${brand} ${GENDERS[i % 2]} ${COLOUR_NAMES[i % 11]} ${KINDS[Math.floor(i / BRANDS.length) % KINDS.length]}`;
    return product(i, brand, descriptor, random);
  });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
  for (const p of specs) indexed.set(p.id, { id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: "NO_BOOST" });
}, 180_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
});

function search(query: string, extra: object = {}, api: RestClient = s.api) {
  return api.post("/search", { organizationId: s.org, catalogId, query, topK: ALL, visual_weight: W, similarity_threshold: 0, ...extra });
}

async function expected(query: string, w = W) {
  return ranking(await storedMap(s, catalogId), indexed.values(), textQuery(text, query), w).filter((h) => h.score >= 0);
}

/** The service answers `query` exactly as the documented score ranks the indexed products. */
async function expectExact(query: string, extra: object = {}, api?: RestClient): Promise<{ productId: string; metadata: JsonRecord }[]> {
  const res = await search(query, extra, api);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expectHits(res.body.results, await expected(query), query);
  return res.body.results;
}

const brandOf = (hit: { metadata: JsonRecord }) => hit.metadata.brand;
const brandCount = (brand: string) => [...indexed.values()].filter((p) => p.metadata.brand === brand).length;

describe("lexical matching", () => {
  it("finds a brand by its exact name: every product of the brand first, scored exactly", async () => {
    for (const brand of ["reebok", "skechers", "fossil"]) {
      const hits = await expectExact(brand);
      expect(hits.slice(0, brandCount(brand)).map(brandOf), brand).toEqual(Array(brandCount(brand)).fill(brand));
    }
  });

  it("finds a brand misspelt by one edit, a long word by two, and a brand by its first four letters", async () => {
    for (const [query, brand] of [["skezhers", "skechers"], ["reeok", "reebok"], ["convesre", "converse"], ["skec", "skechers"]] as const) {
      const hits = await expectExact(query);
      expect(hits.slice(0, brandCount(brand)).map(brandOf), query).toEqual(Array(brandCount(brand)).fill(brand));
    }
    // A prefix the word model also reads as a word: meaning and letters both count.
    expect(brandOf((await expectExact("conv"))[0]!)).toBe("converse");
    // A misspelt product word: within two edits of "sunglasses" (10 letters).
    const sunglasses = await expectExact("sunglases");
    expect(sunglasses.length).toBeGreaterThan(0);
    expect(sunglasses.slice(0, 6).every((h) => specs.find((p) => p.id === h.productId)!.descriptor.includes("sunglasses"))).toBe(true);
  });

  it("matches words the word model does not know on their letters alone, instead of answering nothing", async () => {
    expect(text.encode("myntra").some((x) => x !== 0), "the word model does not know the word").toBe(false);
    const hits = await expectExact("myntra");
    expect(hits.map(brandOf)).toEqual(Array(brandCount("myntra")).fill("myntra"));
    // Unknown and misspelt: still its letters (one substitution; a transposition is two edits).
    expect((await expectExact("myntla")).map(brandOf)).toEqual(Array(brandCount("myntra")).fill("myntra"));
  });

  it("puts the product whose exact title was typed first", async () => {
    for (const p of specs.slice(0, 12)) {
      for (const w of [0.2, 0.5]) {
        const res = await search(p.descriptor, { visual_weight: w, topK: 3 });
        expect(ids(res.body.results)[0], `${p.descriptor} at ${w}`).toBe(p.id);
      }
    }
  });

  it("asks the index once when the nearest elements hold the query's words, though their exact scores round a hair under the bound", async () => {
    // Every nearest element of these queries holds one of their words: its score from its parts'
    // dot products (float64) differs from the index's float32 cosine by up to 1e-7, half the time
    // downwards. When the last one's did, the service asked the index again, twice as wide.
    const queries = BRANDS.flatMap((brand) => KINDS.slice(0, 4).map((kind) => `${brand} ${kind}`));
    const asked = vi.spyOn(s.server.app.searchIndex.index, "query");
    try {
      for (const query of queries) {
        for (const topK of [3, 5]) {
          asked.mockClear();
          const res = await search(query, { topK });
          expect(res.status).toBe(200);
          expectHits(res.body.results, (await expected(query)).slice(0, topK), `${query} top ${topK}`);
          expect(asked, `${query} top ${topK}`).toHaveBeenCalledTimes(1);
        }
      }
    } finally {
      asked.mockRestore();
    }
  });

  it("applies every filter to lexical matches exactly as to vector results", async () => {
    const cases: [string, { field: string; operator: string; value: unknown }[], (m: JsonRecord) => boolean][] = [
      ["reebok", [{ field: "price", operator: "lte", value: 50 }], (m) => (m.price as number) <= 50],
      ["skezhers shoes", [{ field: "brand", operator: "ne", value: "skechers" }], (m) => m.brand !== "skechers"],
      ["conv", [{ field: "colour", operator: "in", value: ["red", "blue", "black"] }], (m) => ["red", "blue", "black"].includes(m.colour as string)],
      ["myntra", [{ field: "price", operator: "gt", value: 40 }], (m) => (m.price as number) > 40],
    ];
    for (const [query, filters, passes] of cases) {
      const res = await search(query, { filters });
      expect(res.status).toBe(200);
      const want = (await expected(query)).filter((h) => passes(h.metadata));
      expectHits(res.body.results, want, `${query} ${JSON.stringify(filters)}`);
      expect(res.body.results.length, query).toBeGreaterThan(0);
    }
  });

  it("answers a query of punctuation or emoji with an empty list, a 1,000-character or mixed-script one exactly, and 400 beyond", async () => {
    for (const query of ["!!! ???", "👟👟", "—"]) {
      const res = await search(query);
      expect(res.status, query).toBe(200);
      expect(res.body.results, query).toEqual([]);
    }
    for (const query of ["reebok 👟 кроссовки 跑鞋", `${"reebok running shoes ".repeat(48)}skec`.slice(0, 1000)]) {
      expect(query.length).toBeLessThanOrEqual(1000);
      await expectExact(query);
    }
    expectErrorObject(await search("a".repeat(1001)), 400, "POST", "/search");
  });
});

describe("visibility of lexical matches", () => {
  it("a deleted product leaves lexical matches by the time DELETE answers", async () => {
    const gone = (await expectExact("fossil"))[0]!.productId;
    expect((await s.api.delete(`${productsPath(s, catalogId)}/${gone}`)).status).toBe(200);
    indexed.delete(gone);
    expect(ids(await expectExact("fossil"))).not.toContain(gone);
    expect(ids(await expectExact("fosil"))).not.toContain(gone);
  });

  it("a re-created product leaves at once, then matches on its new words only, in this process and another", async () => {
    const other = await createApiApp(s.server.config);
    try {
      const { restUrl } = await other.listen();
      const api2 = restClient(restUrl, await s.server.createKey(s.org));
      // Both processes have read the vocabulary before the new word exists.
      await expectExact("puma");
      await expectExact("puma", {}, api2);
      expect((await search("zanzibarq")).body.results).toEqual([]);
      expect((await search("zanzibarq", {}, api2)).body.results).toEqual([]);

      const recreated = (await expectExact("puma"))[0]!.productId;
      const old = specs.find((p) => p.id === recreated)!;
      const fresh = product(Number(recreated.slice(4)), "zanzibarq", "zanzibarq women black sunglasses", seededRandom(99));
      expect((await s.api.post(productsPath(s, catalogId), [{ id: fresh.id, imageUrl: `https://images.example/${fresh.id}-2.jpg`, descriptor: fresh.descriptor, metadata: fresh.metadata }])).status).toBe(202);
      indexed.delete(recreated);
      expect(ids(await expectExact("puma"))).not.toContain(recreated);
      expect(ids(await expectExact("puma", {}, api2))).not.toContain(recreated);

      await processProducts(s, [fresh]);
      indexed.set(fresh.id, { id: fresh.id, descriptor: fresh.descriptor, embeddings: fresh.embeddings, metadata: fresh.metadata, rank: "NO_BOOST" });
      for (const api of [s.api, api2]) {
        expect(ids(await expectExact("zanzibarq", {}, api))[0]).toBe(fresh.id);
        expect(ids(await expectExact("zanzibrq", {}, api))[0]).toBe(fresh.id);
        expect(ids(await expectExact("zanz", {}, api))[0]).toBe(fresh.id);
        // Still a product (meaning counts), but no longer a lexical match of its old brand.
        const puma = await expectExact("puma", {}, api);
        expect(puma.slice(0, brandCount("puma")).map(brandOf)).toEqual(Array(brandCount("puma")).fill("puma"));
        expect(ids(puma.slice(0, brandCount("puma")))).not.toContain(recreated);
      }
      expect(old.descriptor).toContain("puma");
    } finally {
      await other.close();
    }
  });

  it("a rank change lifts a lexical match by the boost from the very next query", async () => {
    const before = await expectExact("reebok");
    const lifted = before[3]!.productId;
    const score = (before[3] as unknown as { score: number }).score;
    expect((await s.api.put(`${productsPath(s, catalogId)}/${lifted}/rank`, { rank: "BOOST" })).status).toBe(200);
    indexed.set(lifted, { ...indexed.get(lifted)!, rank: "BOOST" });
    const after = await expectExact("reebok");
    const hit = after.find((h) => h.productId === lifted) as unknown as { score: number; metadata: JsonRecord };
    expect(hit.score).toBeCloseTo(score + BOOST, 5);
    expect(hit.metadata.rank).toBe("BOOST");
  });

  it("a rank change made through another process shows in this one's next query, though it has read the holders before", async () => {
    const other = await createApiApp(s.server.config);
    try {
      const api2 = restClient((await other.listen()).restUrl, await s.server.createKey(s.org));
      // Both processes have read (and keep) every skechers holder; the change goes through the other.
      await expectExact("skechers");
      const before = await expectExact("skechers", {}, api2);
      const lifted = before[4]!.productId;
      expect((await api2.put(`${productsPath(s, catalogId)}/${lifted}/rank`, { rank: "SUPER_BOOST" })).status).toBe(200);
      indexed.set(lifted, { ...indexed.get(lifted)!, rank: "SUPER_BOOST" });
      for (const api of [s.api, api2]) {
        const after = await expectExact("skechers", {}, api);
        expect(after[0]!.productId).toBe(lifted);
        expect(after[0]!.metadata.rank).toBe("SUPER_BOOST");
      }
    } finally {
      await other.close();
    }
  });
});

describe("a word held by more products than SEARCH_LEXICAL_MAX_HOLDERS", () => {
  // 160 holders of an unknown brand with 2 to 6 words (past RANKED_FROM: their holders are ranked),
  // and 20 other products; a second API process takes any word held by more than 100 products as
  // common.
  const LIMIT = 100;
  const EXTRA = ["women", "black", "running", "shoes", "sunglasses"];
  const common = new Map<string, Indexed>();
  let commonCatalog: string;
  let limited: Awaited<ReturnType<typeof createApiApp>>;
  let api2: RestClient;

  // The price tells the number of words.
  const commonProduct = (i: number, descriptor: string) => {
    const p = product(1000 + i, "zorblax", descriptor, seededRandom(2000 + i));
    return { ...p, metadata: { ...p.metadata, price: 10 * descriptor.split(" ").length } };
  };
  const index = (p: ProductSpec) => common.set(p.id, { id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: "NO_BOOST" });
  const searchCommon = (api: RestClient, query: string, topK: number) =>
    api.post("/search", { organizationId: s.org, catalogId: commonCatalog, query, topK, visual_weight: W, similarity_threshold: 0 });
  const expectedCommon = async (query: string) => ranking(await storedMap(s, commonCatalog), common.values(), textQuery(text, query), W).filter((h) => h.score >= 0);

  beforeAll(async () => {
    commonCatalog = await createCatalog(s, "common words");
    const specs = [
      ...Array.from({ length: 160 }, (_, i) => commonProduct(i, ["zorblax", ...EXTRA.slice(0, 1 + ((i * 7) % 5))].join(" "))),
      ...Array.from({ length: 20 }, (_, i) => commonProduct(160 + i, EXTRA.slice(i % 3).join(" "))),
    ];
    await postProducts(s, commonCatalog, specs);
    await processProducts(s, specs);
    specs.forEach(index);
    limited = await createApiApp({ ...s.server.config, search: { ...s.server.config.search, lexicalMaxHolders: LIMIT } });
    api2 = restClient((await limited.listen()).restUrl, await s.server.createKey(s.org));
  }, 120_000);
  afterAll(async () => {
    await limited?.close();
  });

  it("still finds its products, alone and unknown to the word model: its fewest-worded holders, exactly the best", async () => {
    expect(text.encode("zorblax").some((x) => x !== 0), "the word model does not know the word").toBe(false);
    for (const topK of [1, 3, 5]) {
      const want = (await expectedCommon("zorblax")).slice(0, topK);
      for (const api of [api2, s.api]) {
        const res = await searchCommon(api, "zorblax", topK);
        expect(res.status).toBe(200);
        expectHits(res.body.results, want, `zorblax top ${topK}`);
      }
    }
    // The best are two-word holders.
    expect((await searchCommon(api2, "zorblax", 5)).body.results.map((h: { metadata: JsonRecord }) => h.metadata.price)).toEqual([20, 20, 20, 20, 20]);
  });

  it("credits every nearest element that holds a common word with its lexical match, as the documented score does", async () => {
    for (const query of ["black", "women black", "zorblax black sunglasses"]) {
      const want = new Map((await expectedCommon(query)).map((h) => [h.productId, h.score]));
      const res = await searchCommon(api2, query, 3);
      expect(res.status).toBe(200);
      expect(res.body.results.length, query).toBe(3);
      for (const hit of res.body.results as { productId: string; score: number }[]) expect(hit.score, `${query}: ${hit.productId}`).toBeCloseTo(want.get(hit.productId)!, 5);
    }
  });

  it("reads more of a common word's holders when too few of the fewest-worded pass the filters", async () => {
    // The three-word holders, ranked 33rd to 64th.
    const filters = [{ field: "price", operator: "eq", value: 30 }];
    const want = (await expectedCommon("zorblax")).filter((h) => h.metadata.price === 30);
    expect(want.length).toBeGreaterThanOrEqual(3);
    for (const topK of [1, 3]) {
      const res = await api2.post("/search", { organizationId: s.org, catalogId: commonCatalog, query: "zorblax", topK, visual_weight: W, similarity_threshold: 0, filters });
      expect(res.status).toBe(200);
      expectHits(res.body.results, want.slice(0, topK), `zorblax, filtered, top ${topK}`);
    }
  });

  it("reads a boosted holder first, from the query after its rank changes", async () => {
    const long = [...common.values()].find((p) => p.descriptor.startsWith("zorblax ") && p.metadata.price === 60)!;
    expect(ids((await searchCommon(api2, "zorblax", 5)).body.results)).not.toContain(long.id);
    expect((await s.api.put(`${productsPath(s, commonCatalog)}/${long.id}/rank`, { rank: "BOOST" })).status).toBe(200);
    common.set(long.id, { ...long, rank: "BOOST" });
    const after = (await searchCommon(api2, "zorblax", 5)).body.results;
    expect(ids(after)[0]).toBe(long.id);
    expectHits(after, (await expectedCommon("zorblax")).slice(0, 5), "after the boost");
  });

  it("follows deletes and re-creations from the very next query", async () => {
    const [best] = (await searchCommon(api2, "zorblax", 1)).body.results as { productId: string }[];
    expect((await s.api.delete(`${productsPath(s, commonCatalog)}/${best!.productId}`)).status).toBe(200);
    common.delete(best!.productId);
    expectHits((await searchCommon(api2, "zorblax", 3)).body.results, (await expectedCommon("zorblax")).slice(0, 3), "after the delete");

    // The longest holder re-created with one word: it becomes the best.
    const longest = [...common.values()].filter((p) => p.descriptor.startsWith("zorblax ") && p.rank === "NO_BOOST").sort((a, b) => b.descriptor.length - a.descriptor.length)[0]!;
    const fresh = commonProduct(Number(longest.id.slice(4)) - 1000, "zorblax");
    const res = await s.api.post(productsPath(s, commonCatalog), [{ id: fresh.id, imageUrl: `https://images.example/${fresh.id}-2.jpg`, descriptor: fresh.descriptor, metadata: fresh.metadata }]);
    expect(res.status).toBe(202);
    common.delete(longest.id);
    await processProducts(s, [fresh]);
    index(fresh);
    const after = (await searchCommon(api2, "zorblax", 3)).body.results;
    expect(ids(after)[0]).toBe(fresh.id);
    expectHits(after, (await expectedCommon("zorblax")).slice(0, 3), "after the re-creation");
  });
});

describe("a word held by more products than its ranked set keeps (RANKED_CAP)", () => {
  // 1,100 holders of an unknown word with 2 to 6 words; the price tells the number of words.
  const held = new Map<string, Indexed>();
  let catalog: string;
  let limited: Awaited<ReturnType<typeof createApiApp>>;
  let api2: RestClient;
  const WORDS = ["women", "black", "running", "shoes", "sunglasses"];

  const redis = () => s.server.app.redis;
  async function rankedKey(): Promise<string> {
    const tag = `${s.server.config.redis.keyPrefix}{${catalog}}`;
    return `${tag}:lex:${(await redis().hget(`${tag}:meta`, "lex"))!}:r:quorvex`;
  }
  async function rankedSet(): Promise<{ size: number; marked: boolean }> {
    const key = await rankedKey();
    return { size: await redis().zcard(key), marked: (await redis().zscore(key, "")) !== null };
  }
  const query = (topK: number) => api2.post("/search", { organizationId: s.org, catalogId: catalog, query: "quorvex", topK, visual_weight: W, similarity_threshold: 0 });
  const expectedTop = async (topK: number) => ranking(await storedMap(s, catalog), held.values(), textQuery(text, "quorvex"), W).filter((h) => h.score >= 0).slice(0, topK);

  beforeAll(async () => {
    catalog = await createCatalog(s, "a very common word");
    const specs = Array.from({ length: 1100 }, (_, i) => {
      const descriptor = ["quorvex", ...WORDS.slice(0, 1 + ((i * 7) % 5))].join(" ");
      const p = product(5000 + i, "quorvex", descriptor, seededRandom(7000 + i));
      return { ...p, metadata: { ...p.metadata, price: 10 * descriptor.split(" ").length } };
    });
    await postProducts(s, catalog, specs);
    await processProducts(s, specs);
    for (const p of specs) held.set(p.id, { id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: "NO_BOOST" });
    limited = await createApiApp({ ...s.server.config, search: { ...s.server.config.search, lexicalMaxHolders: 100 } });
    api2 = restClient((await limited.listen()).restUrl, await s.server.createKey(s.org));
  }, 180_000);
  afterAll(async () => {
    await limited?.close();
  });

  it("keeps its first 1,000 holders and still answers exactly", async () => {
    expect(await rankedSet()).toEqual({ size: 1001, marked: true });
    for (const topK of [1, 5]) expectHits((await query(topK)).body.results, await expectedTop(topK), `top ${topK}`);
  });

  it("lets a holder it left out in when a boost puts it first, and reads the word afresh when removals leave 250", async () => {
    const key = await rankedKey();
    const leftOut = [];
    for (const p of held.values()) if (p.metadata.price === 60 && (await redis().zscore(key, p.id)) === null) leftOut.push(p);
    expect(leftOut.length).toBeGreaterThan(0);
    const lifted = leftOut[0]!;
    expect((await s.api.put(`${productsPath(s, catalog)}/${lifted.id}/rank`, { rank: "BOOST" })).status).toBe(200);
    held.set(lifted.id, { ...lifted, rank: "BOOST" });
    const after = (await query(5)).body.results;
    expect(ids(after)[0]).toBe(lifted.id);
    expectHits(after, await expectedTop(5), "after the boost");

    // Remove the first 760 holders: the set falls to 250 kept and is read afresh from the 340 left.
    const first = (await expectedTop(held.size)).slice(0, 760);
    for (const h of first) {
      expect((await s.api.delete(`${productsPath(s, catalog)}/${h.productId}`)).status).toBe(200);
      held.delete(h.productId);
    }
    expect(await rankedSet()).toEqual({ size: 340, marked: false });
    expectHits((await query(5)).body.results, await expectedTop(5), "after the removals");
  }, 120_000);
});

describe("a catalog whose words were indexed before stamps", () => {
  it("is searched exactly as before, and takes writes in its own format, until its next rebuild", async () => {
    const redis = s.server.app.redis;
    const tag = `${s.server.config.redis.keyPrefix}{${catalogId}}`;
    const current = (await redis.hget(`${tag}:meta`, "lex"))!;
    expect(current.startsWith("h")).toBe(true);
    // The same words written the old way: a set of holders per word, words alone in docs.
    const [from, to] = [`${tag}:lex:${current}:`, `${tag}:lex:0a1b2c3d4e5f:`];
    for (const [id, doc] of Object.entries(await redis.hgetall(`${from}docs`))) {
      const words = doc.replace(/^#\S* /, "");
      await redis.hset(`${to}docs`, id, words);
      for (const word of words.split(" ")) await redis.sadd(`${to}w:${word}`, id);
    }
    await redis.rpush(`${to}vocab`, ...(await redis.lrange(`${from}vocab`, 0, -1)));
    await redis.hset(`${tag}:meta`, "lex", "0a1b2c3d4e5f");

    for (const query of ["reebok", "skezhers", "conv", "myntra"]) await expectExact(query);
    const lifted = (await expectExact("converse"))[2]!.productId;
    expect((await s.api.put(`${productsPath(s, catalogId)}/${lifted}/rank`, { rank: "BOOST" })).status).toBe(200);
    indexed.set(lifted, { ...indexed.get(lifted)!, rank: "BOOST" });
    expect((await expectExact("converse"))[0]!.productId).toBe(lifted);
    expect(await redis.type(`${to}w:converse`)).toBe("set");
  });
});
