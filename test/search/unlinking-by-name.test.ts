// Keys unlinked by name, never by a scan of every key, so that cleaning up after a catalog costs
// Redis in proportion to that catalog: the builds a rebuild replaces or abandons, and a dropped
// catalog's index (DeleteCatalog: its builds, its split layouts and their parts). Only the orphan
// sweep's drop also scans. A Redis of this file's own: every test server's first sweep scans
// the shared one, so the scans counted here are this file's alone.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexEntry, MetadataFilter } from "../../src/search/index.js";
import { RedisVectorIndex, type RedisClient } from "../../src/storage/redis/index.js";
import { openOwnClient, startOwnRedis, type OwnRedis } from "../support/own-redis.js";
import { callsOf, keysMatching } from "../support/redis-keys.js";
import { randomUnit, seededRandom } from "../support/random.js";
import { pages } from "../support/index-pages.js";

const DIM = 16;
const query = randomUnit(seededRandom(12), DIM);
const F = (field: string, value: string): MetadataFilter => ({ field, operator: "eq", value });
const VERSION = "unlinking-test|v1|";
const random = seededRandom(11);
const prefix = `vitrine-unlinking-${randomBytes(4).toString("hex")}:`;

// Every kind of key a build has: ranked words (more than RANKED_FROM holders), postings, value
// sets, and writes after the build became current.
const products: IndexEntry[] = Array.from({ length: 600 }, (_, i) => ({
  productId: `d${i}`,
  vector: randomUnit(random, DIM),
  attributes: { shop: `h${i % 4}`, section: `s${i % 3}`, rank: "NO_BOOST" },
  words: ["common", `only${i}`],
}));

/** Begun, then failed halfway: a build (or a split's parts) that is never committed. */
async function* failing(): AsyncGenerator<IndexEntry[]> {
  yield products.slice(0, 200);
  throw new Error("the source failed");
}

let own: OwnRedis;
let redis: RedisClient;
let index: RedisVectorIndex;

beforeAll(async () => {
  own = await startOwnRedis();
  redis = await openOwnClient(own);
  index = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true, valueSetFields: ["shop"] });
}, 120_000);

afterAll(async () => {
  redis?.disconnect();
  await own?.stop();
});

/** Every key of a catalog: its own tag's and its parts'. */
const keysOf = async (catalogId: string) => [...(await keysMatching(redis, `${prefix}{${catalogId}}:*`)), ...(await keysMatching(redis, `${prefix}{${catalogId}~*`))];

/** A catalog with its current build, written to since it became current, and a build abandoned halfway. */
async function catalogWithHistory(catalogId: string, parts: number): Promise<void> {
  await index.rebuild(catalogId, VERSION, pages(products, 200), { parts });
  await index.upsert(catalogId, products.slice(0, 5));
  await expect(index.rebuild(catalogId, VERSION, failing(), { parts })).rejects.toThrow("the source failed");
}

describe("dropping a catalog's index", () => {
  it("unlinks every key of an unsplit catalog, its abandoned build's too, by name: no scan, no other catalog's key", async () => {
    const [doomed, other] = [`drop-a-${randomBytes(3).toString("hex")}`, `drop-b-${randomBytes(3).toString("hex")}`];
    await catalogWithHistory(doomed, 1);
    await index.rebuild(other, VERSION, pages(products, 200));
    const othersKeys = (await keysOf(other)).sort();
    // Its current build and the abandoned one, each with every kind of key.
    const builds = new Set((await keysMatching(redis, `${prefix}{${doomed}}:lex:*`)).map((k) => k.split(":lex:")[1]!.split(":")[0]));
    expect(builds.size).toBe(2);
    expect((await keysOf(doomed)).length).toBeGreaterThan(600);

    const scans = await callsOf(redis, "scan");
    await index.drop(doomed);
    expect(await callsOf(redis, "scan")).toBe(scans);
    expect(await keysOf(doomed)).toEqual([]);
    expect((await keysOf(other)).sort()).toEqual(othersKeys);
  }, 120_000);

  it("unlinks a split catalog's parts by name: the current layout's, a re-split's previous one's and an abandoned split's", async () => {
    const catalogId = `drop-s-${randomBytes(3).toString("hex")}`;
    await index.rebuild(catalogId, VERSION, pages(products, 200), { parts: 2 });
    const first = await redis.hget(`${prefix}{${catalogId}}:meta`, "parts");
    // Re-split in 3: the 2 parts go as the new layout is committed; then a split that fails.
    await catalogWithHistory(catalogId, 3);
    const current = (await redis.hget(`${prefix}{${catalogId}}:meta`, "parts"))!;
    const partTags = new Set((await keysMatching(redis, `${prefix}{${catalogId}~*`)).map((k) => k.slice(prefix.length + 1).split("}")[0]!));
    const generations = new Set([...partTags].map((tag) => tag.split("~")[1]!.split(".")[0]));
    // The current layout's 3 parts and the abandoned split's; the first layout's are gone.
    expect(generations.has(current.split(".")[0]!)).toBe(true);
    expect(generations.has(first!.split(".")[0]!)).toBe(false);
    expect(generations.size).toBe(2);
    expect(partTags.size).toBe(6);

    const scans = await callsOf(redis, "scan");
    await index.drop(catalogId);
    expect(await callsOf(redis, "scan")).toBe(scans);
    expect(await keysOf(catalogId)).toEqual([]);
  }, 120_000);

  it("as the orphan sweep drops it, also unlinks what no name leads to, in one scan of every key", async () => {
    const catalogId = `drop-o-${randomBytes(3).toString("hex")}`;
    await index.rebuild(catalogId, VERSION, pages(products.slice(0, 50), 200));
    // Keys as older versions left them: a build no set names, two parts of a split no layout names.
    const strays = [`${prefix}{${catalogId}}:lex:hold:w:common`, `${prefix}{${catalogId}~dead.0}:meta`, `${prefix}{${catalogId}~dead.1}:meta`];
    for (const key of strays) await redis.hset(key, "stray", "1");
    const bystander = `${prefix}{${catalogId}x}:meta`;
    await redis.hset(bystander, "version", "another catalog's");

    await index.drop(catalogId);
    expect((await keysOf(catalogId)).sort()).toEqual([...strays].sort());
    // What one pass over every key takes (the sweep's own search for orphans): the drop takes no more.
    let scans = await callsOf(redis, "scan");
    await index.catalogIds();
    const pass = (await callsOf(redis, "scan")) - scans;
    scans = await callsOf(redis, "scan");
    await index.drop(catalogId, { everyKey: true });
    expect((await callsOf(redis, "scan")) - scans).toBeLessThanOrEqual(pass);
    expect(await keysOf(catalogId)).toEqual([]);
    expect(await redis.hget(bystander, "version")).toBe("another catalog's");
  }, 60_000);
});

describe("a rebuild's replaced builds", () => {
  const tag = `builds-${randomBytes(4).toString("hex")}`;
  const lexical = `${prefix}{${tag}}:lex:`;
  // Every kind of a build's keys: a word of more than RANKED_FROM holders (ranked), postings, a
  // field with value sets, and writes after the build became current (write count and log). Past
  // a thousand words and products: the unlinking reads the vocabulary and fdocs a page at a time.
  const many: IndexEntry[] = Array.from({ length: 1200 }, (_, i) => ({
    productId: `q${i}`,
    vector: randomUnit(random, DIM),
    attributes: { shop: `h${i % 5}`, section: `s${i % 3}`, rank: "NO_BOOST" },
    words: ["common", `only${i}`],
  }));
  const buildOf = async () => (await redis.hget(`${prefix}{${tag}}:meta`, "lex"))!;
  const keysOfBuild = async (build: string) => keysMatching(redis, `${lexical}${build}:*`);
  const kinds = (keys: string[], build: string) => [...new Set(keys.map((k) => k.slice(`${lexical}${build}:`.length).split(":")[0]))].sort();

  it("unlinks every key of the builds it replaces, begun or committed, by name: no scan of the keyspace", async () => {
    await index.rebuild(tag, VERSION, pages(many, 200));
    await index.upsert(tag, many.slice(0, 3));
    const replaced = await buildOf();
    expect(kinds(await keysOfBuild(replaced), replaced)).toEqual(["attr", "docs", "f", "fdocs", "fv", "r", "valuesets", "vec", "vocab", "w", "wlog", "writes"]);
    // A build begun and never committed (its pages failed halfway).
    await expect(index.rebuild(tag, VERSION, failing())).rejects.toThrow("the source failed");
    const abandoned = (await keysMatching(redis, `${lexical}*`)).map((k) => k.slice(lexical.length).split(":")[0]!).find((b) => b !== replaced)!;
    expect(abandoned).toBeDefined();

    const scans = await callsOf(redis, "scan");
    await index.rebuild(tag, VERSION, pages(many, 200));
    expect(await callsOf(redis, "scan")).toBe(scans);
    const current = await buildOf();
    expect(await keysOfBuild(replaced)).toEqual([]);
    expect(await keysOfBuild(abandoned)).toEqual([]);
    expect((await keysMatching(redis, `${lexical}*`)).every((k) => k.startsWith(`${lexical}${current}:`))).toBe(true);
    expect(await redis.smembers(`${prefix}{${tag}}:builds`)).toEqual([current]);
    // The current build answers.
    const answer = await index.query(tag, { vector: query, count: 2 * many.length, filters: [F("shop", "h2")], exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });
    expect(answer.kind === "ok" && answer.hits.length).toBe(many.length / 5);
  }, 60_000);
});
