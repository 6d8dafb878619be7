// What search and recommendations can see, as products change: re-created products leave the index
// until processed again, deletions (one, many, all) and catalog deletion take effect by the time the
// response is sent, and products in ERROR are never returned. Real Redis 8 and MariaDB.
import { keysMatching } from "../support/redis-keys.js";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedSentenceEncoder } from "../../src/embeddings/index.js";
import { productEmbeddings } from "../../src/storage/mysql/schema.js";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import {
  createCatalog,
  expectHits,
  failProducts,
  ids,
  openText,
  postProducts,
  processProducts,
  productQuery,
  productStatus,
  productsPath,
  ranking,
  serve,
  storedMap,
  syntheticProducts,
  textQuery,
} from "../support/search-fixture.js";
import type { Indexed, JsonRecord, ProductSpec, Served } from "../support/search-fixture.js";

const W = 0.5;
const ALL = 100;

let text: OpenedSentenceEncoder;
let s: Served;
let catalogId: string;
let specs: ProductSpec[];
/** The products the test expects search to see: PROCESSED ones, with their current metadata. */
const indexed = new Map<string, Indexed>();

beforeAll(async () => {
  text = await openText();
  s = await serve();
  catalogId = await createCatalog(s, "main");
  specs = syntheticProducts(text, 60, { seed: 21 });
  await postProducts(s, catalogId, specs);
  await processProducts(s, specs);
  for (const p of specs) indexed.set(p.id, { id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: "NO_BOOST" });
}, 180_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
});

const spec = (id: string) => specs.find((p) => p.id === id)!;

function search(query: string, extra: object = {}, catalog = catalogId) {
  return s.api.post("/search", { organizationId: s.org, catalogId: catalog, query, topK: ALL, visual_weight: W, similarity_threshold: 0, ...extra });
}

function recs(productId: string, extra: object = {}, catalog = catalogId) {
  return s.api.post("/recs", { organizationId: s.org, catalogId: catalog, productId, topK: ALL, ...extra });
}

async function expectedSearch(query: string) {
  const map = await storedMap(s, catalogId);
  return ranking(map, indexed.values(), textQuery(text, query), W).filter((h) => h.score >= 0);
}

async function expectedRecs(subject: string) {
  const map = await storedMap(s, catalogId);
  const others = [...indexed.values()].filter((p) => p.id !== subject);
  return ranking(map, others, productQuery(map, spec(subject).embeddings), 1);
}

/** Search for `query` and recommendations for `subject` are exactly what `indexed` predicts. */
async function expectExactly(query: string, subject: string): Promise<{ search: string[]; recs: string[] }> {
  const found = await search(query);
  expect(found.status).toBe(200);
  expectHits(found.body.results, await expectedSearch(query), `search ${query}`);
  const similar = await recs(subject);
  expect(similar.status).toBe(200);
  expectHits(similar.body.results, await expectedRecs(subject), `recs ${subject}`);
  return { search: ids(found.body.results), recs: ids(similar.body.results) };
}

/** The product ranked first for `query` now, so that its absence is visible. */
async function topFor(query: string): Promise<string> {
  const top = (await expectedSearch(query))[0]!.productId;
  expect(ids((await search(query)).body.results)[0]).toBe(top);
  return top;
}

describe("re-created products", () => {
  it("leave search and recommendations at once, until processed again; then show their new metadata", async () => {
    const query = "red dress";
    const subject = "sku-31";
    const recreated = await topFor(query);
    expect(recreated).not.toBe(subject);
    const before = await expectExactly(query, subject);
    expect(before.recs).toContain(recreated);

    const metadata: JsonRecord = { colour: "teal", edition: 2 };
    const res = await s.api.post(productsPath(s, catalogId), [
      { id: recreated, imageUrl: `https://images.example/${recreated}-v2.jpg`, descriptor: spec(recreated).descriptor, metadata },
    ]);
    expect(res.status).toBe(202);
    expect(await productStatus(s, catalogId, recreated)).toBe("PROCESSING");

    // Gone by the time Create Products answered.
    const saved = indexed.get(recreated)!;
    indexed.delete(recreated);
    const during = await expectExactly(query, subject);
    expect(during.search).not.toContain(recreated);
    expect(during.recs).not.toContain(recreated);
    expect((await search(query, { filters: [{ field: "edition", operator: "eq", value: 2 }] })).body.results).toEqual([]);
    // Its stored vectors (from the last processing) still serve as a subject; it never recommends itself.
    const asSubject = await recs(recreated);
    expect(asSubject.status).toBe(200);
    expectHits(asSubject.body.results, await expectedRecs(recreated));

    await processProducts(s, [spec(recreated)]);
    expect(await productStatus(s, catalogId, recreated)).toBe("PROCESSED");
    indexed.set(recreated, { ...saved, metadata });
    const after = await expectExactly(query, subject);
    expect(after.search[0]).toBe(recreated);
    const hit = (await search(query)).body.results[0];
    expect(hit.metadata).toEqual({ colour: "teal", edition: 2, rank: "NO_BOOST" });
    expect(ids((await search(query, { filters: [{ field: "edition", operator: "eq", value: 2 }] })).body.results)).toEqual([recreated]);
    const oldColour = spec(recreated).metadata.colour as string;
    expect(ids((await search(query, { filters: [{ field: "colour", operator: "eq", value: oldColour }] })).body.results)).not.toContain(recreated);
  });
});

describe("deleted products", () => {
  it("DELETE of one product removes it from search and recommendations by the time it answers", async () => {
    const query = "white sneakers";
    const gone = await topFor(query);
    const res = await s.api.delete(`${productsPath(s, catalogId)}/${gone}`);
    expect(res.status).toBe(200);
    indexed.delete(gone);
    const after = await expectExactly(query, "sku-2");
    expect(after.search).not.toContain(gone);
    expect(after.recs).not.toContain(gone);
    expectErrorObject(await recs(gone), 404, "POST", "/recs");
  });

  it("DELETE of several products removes exactly those", async () => {
    const query = "green summer top";
    const top = ids(await expectedSearch(query)).slice(0, 3);
    const res = await s.api.delete(productsPath(s, catalogId), [...top, "never-existed"]);
    expect(res.body).toMatchObject({ status: "success", count: 3 });
    for (const id of top) indexed.delete(id);
    const after = await expectExactly(query, "sku-7");
    for (const id of top) {
      expect(after.search).not.toContain(id);
      expect(after.recs).not.toContain(id);
    }
  });

  it("DELETE of every product (no body) empties search and recommendations at once", async () => {
    const other = await createCatalog(s, "delete-all");
    const few = syntheticProducts(text, 25, { seed: 22, idOf: (i) => `all-${i}` });
    await postProducts(s, other, few);
    await processProducts(s, few);
    expect((await search("brown boots", {}, other)).body.results.length).toBeGreaterThan(0);
    expect((await recs("all-1", {}, other)).body.results).toHaveLength(24);

    const res = await s.api.delete(productsPath(s, other));
    expect(res.body).toMatchObject({ status: "success", count: 25 });
    const found = await search("brown boots", {}, other);
    expect(found.status).toBe(200);
    expect(found.body).toEqual({ status: "success", results: [] });
    expectErrorObject(await recs("all-1", {}, other), 404, "POST", "/recs");
    // Nothing of the catalog is left in its vector set.
    const keys = await keysMatching(s.server.app.redis, `${s.server.config.redis.keyPrefix}*${other}*`);
    for (const key of keys.filter((k) => k.endsWith(":vectors"))) expect(Number(await s.server.app.redis.call("VCARD", key))).toBe(0);
    // The main catalog is untouched.
    expect((await search("brown boots")).body.results.length).toBeGreaterThan(0);
  });
});

describe("deleted catalogs", () => {
  it("answer 404 to search and recommendations, and their Redis keys are gone", async () => {
    const doomed = await createCatalog(s, "doomed");
    const few = syntheticProducts(text, 25, { seed: 23, idOf: (i) => `doomed-${i}` });
    await postProducts(s, doomed, few);
    await processProducts(s, few);
    expect((await search("black leather handbag", {}, doomed)).body.results.length).toBeGreaterThan(0);
    const prefix = s.server.config.redis.keyPrefix;
    const keysOf = async (id: string) => (await keysMatching(s.server.app.redis, `${prefix}*`)).filter((k) => k.includes(id));
    expect(await keysOf(doomed)).not.toEqual([]);

    const res = await s.api.delete(`/organizations/${s.org}/catalogs/${doomed}`);
    expect(res.status).toBe(200);
    expectErrorObject(await search("black leather handbag", {}, doomed), 404, "POST", "/search");
    expectErrorObject(await recs("doomed-1", {}, doomed), 404, "POST", "/recs");
    expect(await keysOf(doomed)).toEqual([]);
    // Only that catalog's keys.
    expect(await keysOf(catalogId)).not.toEqual([]);
    expect((await search("black leather handbag")).status).toBe(200);
  });
});

describe("products in ERROR", () => {
  it("a product that never processed fails: never returned, and no subject for recommendations", async () => {
    const fresh = syntheticProducts(text, 1, { seed: 24, idOf: () => "never-ok", metadataOf: () => ({ only: "never-ok" }) });
    await postProducts(s, catalogId, fresh);
    await failProducts(s, catalogId, ["never-ok"]);
    expect(await productStatus(s, catalogId, "never-ok")).toBe("ERROR");
    const res = await recs("never-ok");
    expectErrorObject(res, 400, "POST", "/recs");
    expect(res.body.message).toMatch(/no vectors yet \(status ERROR\)/);
    expect((await search("red dress", { filters: [{ field: "only", operator: "exists", value: true }] })).body.results).toEqual([]);
  });

  it("a processed product that fails after re-creation keeps its vectors: out of search, yet a subject for recommendations", async () => {
    const query = "blue denim jacket";
    const failed = await topFor(query);
    const { db } = s.server.app.mysql;
    const vectorsOf = () =>
      db
        .select({ updatedAt: productEmbeddings.updatedAt, image: productEmbeddings.image })
        .from(productEmbeddings)
        .where(and(eq(productEmbeddings.catalogId, catalogId), eq(productEmbeddings.productId, failed)));
    const stored = await vectorsOf();
    expect(stored).toHaveLength(1);

    await s.api.post(productsPath(s, catalogId), [
      { id: failed, imageUrl: "https://images.example/broken.jpg", descriptor: spec(failed).descriptor, metadata: { only: "failed" } },
    ]);
    await failProducts(s, catalogId, [failed]);
    expect(await productStatus(s, catalogId, failed)).toBe("ERROR");
    const listed = await s.api.get(`${productsPath(s, catalogId)}/${failed}`);
    expect(listed.body).toMatchObject({ id: failed, status: "ERROR" });
    // Re-creation and failure left the embeddings of the last successful processing in place.
    expect(await vectorsOf()).toEqual(stored);

    indexed.delete(failed);
    const seen = await expectExactly(query, "sku-11");
    expect(seen.search).not.toContain(failed);
    expect(seen.recs).not.toContain(failed);
    const onlyIt = [{ field: "only", operator: "eq", value: "failed" }];
    expect((await search(query, { filters: onlyIt })).body.results).toEqual([]);
    expect((await recs("sku-11", { filters: onlyIt })).body.results).toEqual([]);

    // As a subject, it is compared through its stored vectors.
    const similar = await recs(failed);
    expect(similar.status).toBe(200);
    expectHits(similar.body.results, await expectedRecs(failed));

    // A rebuild from MySQL keeps it out too.
    const admin = restClient(s.server.restUrl, s.server.adminKey);
    const rebuilt = await admin.post(`/organizations/${s.org}/catalogs/${catalogId}/reindex`, {});
    expect(rebuilt.body).toMatchObject({ status: "success", indexed: indexed.size });
    const again = await expectExactly(query, "sku-11");
    expect(again.search).not.toContain(failed);
  });
});
