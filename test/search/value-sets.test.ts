// Value sets (SEARCH_VALUE_SETS; src/storage/redis/lexical-script.ts, query-script.ts) on the run's
// real Redis (one server, or the cluster in the "cluster" project): every value of a configured
// field gets a vector set of its own, kept by every write to the build, and an eq filter on such a
// value (or an in filter on a few) passed by more products than are scored exactly is answered by
// HNSW over just them, instead of over the whole set and post-filtered or pushed down. Expected
// answers come from matchesFilters over the attributes written and a dot product here.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/catalogs/index.js";
import { loadConfig } from "../../src/config/index.js";
import { matchesFilters, type MetadataFilter } from "../../src/search/filters.js";
import type { IndexAnswer, IndexEntry } from "../../src/search/index.js";
import { forEachPrimary, openRedis, RedisVectorIndex, type RedisClient } from "../../src/storage/redis/index.js";
import { VALUE_SET_EF_FACTOR, VALUE_SET_EF_FROM } from "../../src/storage/redis/query-script.js";
import { expectHeldFromSecondAsk } from "../support/held-filter.js";
import { callsOf, keysMatching } from "../support/redis-keys.js";
import { monitorCommands } from "../support/redis-monitor.js";
import { startOwnRedis, type OwnRedis } from "../support/own-redis.js";
import { redisEnv } from "../support/test-server.js";
import { randomUnit, seededRandom } from "../support/random.js";
import { pages } from "../support/index-pages.js";

// Two sections of 4,000: each past the 3,000 candidates scored exactly.
const N = 8000;
const DIM = 16;
const VERSION = "value-sets-test|v1|";
const random = seededRandom(11);
const catalogId = `value-sets-${randomBytes(4).toString("hex")}`;
const prefix = `vitrine-value-sets-${randomBytes(4).toString("hex")}:`;
let redis: RedisClient;
let index: RedisVectorIndex;

function attributesOf(i: number): JsonObject {
  // tier: as broad as section, without value sets.
  return { section: `s${i % 2}`, tier: `t${Math.floor(i / 2) % 2}`, zone: `z${Math.floor(i / 3) % 8}`, shop: `h${i % 100}`, price: i % 50, rank: "NO_BOOST" };
}

const entries: IndexEntry[] = Array.from({ length: N }, (_, i) => ({ productId: `p${i}`, vector: randomUnit(random, DIM), attributes: attributesOf(i), words: [] }));
const byId = new Map(entries.map((e) => [e.productId, e]));
const query = randomUnit(random, DIM);

function ask(filters: MetadataFilter[], count = 20): Promise<IndexAnswer> {
  return index.query(catalogId, { vector: query, count, filters, exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });
}

function cosine(id: string, among: ReadonlyMap<string, IndexEntry> = byId): number {
  const v = among.get(id)!.vector;
  let d = 0;
  for (let j = 0; j < DIM; j++) d += v[j]! * query[j]!;
  return d;
}

/** The products passing the filters, best first. */
function best(filters: MetadataFilter[], among: ReadonlyMap<string, IndexEntry> = byId): string[] {
  return [...among.values()].filter((e) => matchesFilters(filters, e.attributes)).map((e) => e.productId).sort((a, b) => cosine(b, among) - cosine(a, among));
}

const eq = (field: string, value: string): MetadataFilter => ({ field, operator: "eq", value });

/**
 * A query whose filters a value set answers: 20 hits, none failing (over the whole set, plain HNSW
 * returns hits that fail, marked), 19 of the true best 20 at least, scored exactly.
 */
async function answeredFromSets(filters: MetadataFilter[]) {
  const answer = await ask(filters);
  if (answer.kind !== "ok") throw new Error(answer.kind);
  expect(answer.hits.length).toBe(20);
  expect(answer.hits.filter((h) => h.failsFilters)).toEqual([]);
  const truth = best(filters).slice(0, 20);
  expect(answer.hits.filter((h) => truth.includes(h.productId)).length).toBeGreaterThanOrEqual(19);
  for (const h of answer.hits) expect(h.cosine).toBeCloseTo(cosine(h.productId), 5);
  return answer.hits;
}

async function valueSet(value: string, field = "section", id = catalogId): Promise<{ key: string; size: number }> {
  const build = await redis.hget(`${prefix}{${id}}:meta`, "lex");
  const key = `${prefix}{${id}}:lex:${build}:fv:${JSON.stringify([field, value])}`;
  return { key, size: Number(await redis.call("VCARD", key)) };
}

beforeAll(async () => {
  const config = loadConfig({ ...redisEnv(), REDIS_KEY_PREFIX: prefix, SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: "section,zone" });
  redis = await openRedis({ url: config.redis.url, clusterNodes: config.redis.clusterNodes });
  index = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true, valueSetFields: config.search.valueSetFields });
  await index.rebuild(catalogId, VERSION, pages(entries));
}, 120_000);

afterAll(async () => {
  await index?.drop(catalogId);
  redis?.disconnect();
});

/**
 * The key and EF of each VSIM of catalog `id` that Redis runs during `work` (MONITOR lists the
 * commands scripts call), once `count` of them are seen.
 */
async function vsimEfs(count: number, work: () => Promise<void>, id = catalogId): Promise<[string, number][]> {
  const seen: [string, number][] = [];
  const monitors = await forEachPrimary(redis, (node) =>
    monitorCommands(node.options, (args) => {
      if (args[0]?.toUpperCase() !== "VSIM" || !args[1]?.startsWith(`${prefix}{${id}}`)) return;
      const ef = args.findIndex((a) => a.toUpperCase() === "EF");
      seen.push([args[1], ef < 0 ? NaN : Number(args[ef + 1])]);
    }),
  );
  try {
    await work();
    for (const deadline = Date.now() + 5000; seen.length < count && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    return seen;
  } finally {
    await Promise.all(monitors.map((m) => m.stop()));
  }
}

describe("value sets", () => {
  it("holds every product of a configured field's value in that value's set, and no other field's", async () => {
    expect((await valueSet("s0")).size).toBe(4000);
    expect((await valueSet("s1")).size).toBe(4000);
    const build = await redis.hget(`${prefix}{${catalogId}}:meta`, "lex");
    expect(Number(await redis.call("VCARD", `${prefix}{${catalogId}}:lex:${build}:fv:${JSON.stringify(["tier", "t0"])}`))).toBe(0);
  });

  it("answers an eq filter on such a value by HNSW over just its products", async () => {
    const hits = await answeredFromSets([eq("section", "s0")]);
    for (const h of hits) expect(h.attributes).toEqual(byId.get(h.productId)!.attributes);

    const whole = await ask([eq("tier", "t0")]);
    if (whole.kind !== "ok") throw new Error(whole.kind);
    expect(whole.hits.filter((h) => h.failsFilters).length).toBeGreaterThan(0);
  });

  it("answers an in filter over values with sets by HNSW over each, merged by score", async () => {
    // Four zones of 1,000 (and a value no product holds): 4,000 pass, past those scored exactly.
    const zones = (values: string[]): MetadataFilter[] => [{ field: "zone", operator: "in", value: values }];
    const hits = await answeredFromSets(zones(["z1", "z2", "z3", "z4", "z9"]));
    expect(new Set(hits.map((h) => h.attributes!.zone)).size).toBeGreaterThan(1);

    // A product holding two of the values is in both sets, and answered once.
    const original = byId.get("p3")!;
    await index.upsert(catalogId, [{ ...original, vector: Float32Array.from(query), attributes: { ...original.attributes, zone: ["z1", "z2"] } }]);
    try {
      const twice = await ask(zones(["z1", "z2", "z3", "z4"]));
      if (twice.kind !== "ok") throw new Error(twice.kind);
      expect(twice.hits[0]!.productId).toBe("p3");
      expect(new Set(twice.hits.map((h) => h.productId)).size).toBe(twice.hits.length);
    } finally {
      await index.upsert(catalogId, [original]);
    }

    // Past VALUE_SETS_PER_GROUP values: the whole set, its plain HNSW answer post-filtered.
    const many = await ask(zones(["z0", "z1", "z2", "z3", "z4", "z5", "x1", "x2", "x3"]));
    if (many.kind !== "ok") throw new Error(many.kind);
    expect(many.hits.filter((h) => h.failsFilters).length).toBeGreaterThan(0);
  });

  it("searches a value set of at most VALUE_SET_EF_FROM elements as deep as the whole set", async () => {
    const efs = await vsimEfs(2, async () => {
      await ask([eq("section", "s0")]);
      // No value sets: plain HNSW over the whole set, asked for 40 and post-filtered.
      await ask([eq("tier", "t0")]);
    });
    const sectionKey = (await valueSet("s0")).key;
    expect(efs).toEqual([
      [sectionKey, 100],
      [`${prefix}{${catalogId}}:vectors`, 100],
    ]);
  });

  it("narrows by the value set and checks the other filters on its elements", async () => {
    for (const filters of [
      // Plain HNSW over the value set, asked for count / share, post-filtered by the postings.
      [eq("section", "s1"), eq("tier", "t1")],
      // A range: pushed down into the value set's HNSW.
      [eq("section", "s1"), { field: "price", operator: "lt", value: 10 } as MetadataFilter],
    ]) {
      const answer = await ask(filters);
      if (answer.kind !== "ok") throw new Error(answer.kind);
      const passed = answer.hits.filter((h) => !h.failsFilters);
      expect(passed.length).toBeGreaterThan(0);
      for (const h of passed) expect(matchesFilters(filters, h.attributes), h.productId).toBe(true);
      const truth = best(filters).slice(0, 10);
      expect(passed.filter((h) => truth.includes(h.productId)).length, JSON.stringify(filters)).toBeGreaterThanOrEqual(8);
    }
    // Few pass (40): the candidates are scored exactly, value set or not.
    const few = [eq("section", "s1"), eq("shop", "h7")];
    const answer = await ask(few);
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.exact).toBe(true);
    expect(answer.hits.map((h) => h.productId)).toEqual(best(few).slice(0, 20));
  });

  // A section (a value set) and tier in both of its values: 4,000 pass, past the 3,000 read on a
  // first ask; 600 asked, more than plain HNSW may be asked for (count x 2 > 1,000 elements).
  const sectionAndTier = (section: string): MetadataFilter[] => [eq("section", section), { field: "tier", operator: "in", value: ["t0", "t1"] }];
  const asker = (mine: RedisVectorIndex, filters: MetadataFilter[]) => () =>
    mine.query(catalogId, { vector: query, count: 600, filters, exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });

  it("answers several filters asked again soon from their candidates, held, though one has value sets", async () => {
    const mine = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true, holderCacheEntries: 10_000 });
    const filters = sectionAndTier("s0");
    // Asked once: HNSW over the section's value set. Then the candidates, read, then held.
    await expectHeldFromSecondAsk(asker(mine, filters), best(filters).slice(0, 600));
  });

  it("of filters answered by HNSW asked in turn past its room, holds the one that fits and keeps it", async () => {
    // Room for one pair's 4,000 candidates, at the most a guess of them may be (half as many again).
    const mine = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true, holderCacheEntries: 7000 });
    const [s0, s1] = [sectionAndTier("s0"), sectionAndTier("s1")];
    const exact = async (filters: MetadataFilter[]): Promise<boolean> => {
      const answer = await asker(mine, filters)();
      if (answer.kind !== "ok") throw new Error(answer.kind);
      if (answer.exact) expect(answer.hits.map((h) => h.productId)).toEqual(best(filters).slice(0, 600));
      return answer.exact;
    };
    // Each asked once: HNSW. Asked again, s0 is read and held; s1, asked as often as s0, would
    // push it out: counted as the 4,000 it would hold, it is not admitted, and HNSW answers it.
    expect([await exact(s0), await exact(s1)]).toEqual([false, false]);
    for (let turn = 0; turn < 3; turn++) expect([await exact(s0), await exact(s1)]).toEqual([true, false]);
  });

  it("follows upserts, moves and removals, whichever process writes them", async () => {
    // Another process, configured without value sets: the build's own list decides.
    const other = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true });
    const top = best([eq("section", "s0")])[0]!;
    // Moved to s1 and put nearest the query; a product of s1 removed.
    const moved = { ...byId.get(top)!, vector: Float32Array.from(query), attributes: { ...byId.get(top)!.attributes, section: "s1" } };
    const removed = best([eq("section", "s1")])[0]!;
    await other.upsert(catalogId, [moved]);
    await other.remove(catalogId, [removed]);
    byId.set(top, moved);
    byId.delete(removed);
    expect((await valueSet("s0")).size).toBe(3999);
    expect((await valueSet("s1")).size).toBe(4000);
    const s1 = await ask([eq("section", "s1")]);
    const s0 = await ask([eq("section", "s0")]);
    if (s1.kind !== "ok" || s0.kind !== "ok") throw new Error("not ok");
    expect(s1.hits[0]!.productId).toBe(top);
    expect(s1.hits[0]!.cosine).toBeCloseTo(1, 5);
    expect(s1.hits.map((h) => h.productId)).not.toContain(removed);
    expect(s0.hits.map((h) => h.productId)).not.toContain(top);
    // Its element in the value set is the one written (unit length, as the copy for candidates).
    const element = (await redis.call("VEMB", (await valueSet("s1")).key, top)) as string[];
    for (let j = 0; j < DIM; j++) expect(Number(element[j])).toBeCloseTo(query[j]!, 5);
  });

  it("puts a product written twice in one write only where the last write puts it", async () => {
    const id = best([eq("section", "s0")])[1]!;
    const there = { ...byId.get(id)!, attributes: { ...byId.get(id)!.attributes, section: "s1" } };
    const back = { ...byId.get(id)!, vector: randomUnit(random, DIM) };
    await index.upsert(catalogId, [there, back]);
    byId.set(id, back);
    expect((await valueSet("s0")).size).toBe(3999);
    expect((await valueSet("s1")).size).toBe(4000);
    expect(await redis.call("VEMB", (await valueSet("s1")).key, id)).toBeNull();
    const element = (await redis.call("VEMB", (await valueSet("s0")).key, id)) as string[];
    for (let j = 0; j < DIM; j++) expect(Number(element[j])).toBeCloseTo(back.vector[j]!, 5);
  });

  it("are written only by builds begun with the field configured: a reindex without it leaves none", async () => {
    const plain = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, filterPostings: true });
    const before = (await valueSet("s0")).key;
    await plain.rebuild(catalogId, VERSION, pages([...byId.values()]));
    expect(Number(await redis.exists(before))).toBe(0);
    expect((await valueSet("s0")).size).toBe(0);
    const answer = await ask([eq("section", "s0")]);
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.hits.filter((h) => h.failsFilters).length).toBeGreaterThan(0);
    // And a reindex with it configured again writes them again.
    await index.rebuild(catalogId, VERSION, pages([...byId.values()]));
    expect((await valueSet("s0")).size).toBe(3999);
  }, 180_000);
});

describe("a filter on one field passed by few, not held", () => {
  // A Redis of this block's own, whose command counts are its alone: 2,000 products, each zone
  // (a value set) 250 of them, within the candidates scored exactly.
  const few = entries.slice(0, 2000);
  const fewById = new Map(few.map((e) => [e.productId, e]));
  let own: OwnRedis;
  let ownClient: RedisClient;
  let ownIndex: RedisVectorIndex;

  beforeAll(async () => {
    own = await startOwnRedis();
    const config = loadConfig({ ...own.env, REDIS_KEY_PREFIX: prefix, SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: "section,zone" });
    ownClient = await openRedis({ url: config.redis.url, clusterNodes: config.redis.clusterNodes });
    ownIndex = new RedisVectorIndex(ownClient, { keyPrefix: prefix, ef: 100, filterPostings: true, valueSetFields: config.search.valueSetFields, holderCacheEntries: 10_000 });
    await ownIndex.rebuild(catalogId, VERSION, pages(few));
  }, 120_000);

  afterAll(async () => {
    ownClient?.disconnect();
    await own?.stop();
  });

  /** The answer, exact, and how many VSIMs it took (one per value set scanned; none from candidates). */
  async function answered(filters: MetadataFilter[], by = ownIndex): Promise<number> {
    const before = await callsOf(ownClient, "vsim");
    const answer = await by.query(catalogId, { vector: query, count: 20, filters, exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });
    const vsims = (await callsOf(ownClient, "vsim")) - before;
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.exact).toBe(true);
    expect(answer.hits.map((h) => h.productId), JSON.stringify(filters)).toEqual(best(filters, fewById).slice(0, 20));
    for (const h of answer.hits) expect(h.cosine).toBeCloseTo(cosine(h.productId, fewById), 5);
    for (const h of answer.hits) expect(h.attributes).toEqual(fewById.get(h.productId)!.attributes);
    return vsims;
  }

  it("is answered by an exact scan of its values' sets, not by reading its candidates whole", async () => {
    expect(await answered([eq("zone", "z1")])).toBe(1);
    expect(await answered([{ field: "zone", operator: "in", value: ["z2", "z3"] }])).toBe(2);
    // Another filter beside it: pushed into the scan.
    expect(await answered([eq("zone", "z4"), { field: "price", operator: "lt", value: 10 }])).toBe(1);
    // A field without value sets: its candidates, as before.
    expect(await answered([eq("shop", "h7")])).toBe(0);
  });

  it("is held from its second ask when asked again soon", async () => {
    const filters = [eq("zone", "z5")];
    expect(await answered(filters)).toBe(1);
    // Read by stamp, then held: no VSIM either time.
    expect(await answered(filters)).toBe(0);
    expect(await answered(filters)).toBe(0);
  });

  it("counts, for admission, the candidates holding it would hold", async () => {
    // Room for one zone's 250: z7, scanned, counts as the 250 it would hold, so it is not admitted
    // to push out z6, asked as often (it would be read by stamp, then not held).
    const mine = new RedisVectorIndex(ownClient, { keyPrefix: prefix, ef: 100, filterPostings: true, holderCacheEntries: 400 });
    const [z6, z7] = [[eq("zone", "z6")], [eq("zone", "z7")]];
    expect(await answered(z6, mine)).toBe(1);
    expect(await answered(z7, mine)).toBe(1);
    for (let turn = 0; turn < 3; turn++) {
      expect(await answered(z6, mine)).toBe(0);
      expect(await answered(z7, mine)).toBe(1);
    }
  });
});

describe("value sets of a catalog split into parts", () => {
  // 14,000 products in 2 parts: a section (7,000) or 4 zones (7,000) pass about 3,500 per part,
  // past the candidates scored exactly there too.
  const splitId = `${catalogId}-split`;
  const many: IndexEntry[] = Array.from({ length: 14_000 }, (_, i) => ({ productId: `q${i}`, vector: randomUnit(random, DIM), attributes: attributesOf(i), words: [] }));
  const manyById = new Map(many.map((e) => [e.productId, e]));

  beforeAll(async () => {
    await index.rebuild(splitId, VERSION, pages(many), { parts: 2 });
  }, 180_000);
  afterAll(async () => {
    await index?.drop(splitId);
  });

  it("keeps each part's value sets and answers eq and in filters from them, merged over the parts", async () => {
    const sets = (await keysMatching(redis, `${prefix}{${splitId}~*:fv:*`)).filter((k) => k.endsWith(JSON.stringify(["section", "s0"])));
    expect(sets.length).toBe(2);
    const sizes = await Promise.all(sets.map(async (k) => Number(await redis.call("VCARD", k))));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(7000);
    for (const size of sizes) expect(size).toBeGreaterThan(3000);

    for (const filters of [[eq("section", "s0")], [{ field: "zone", operator: "in", value: ["z1", "z2", "z3", "z4"] } as MetadataFilter]]) {
      const answer = await index.query(splitId, { vector: query, count: 20, filters, exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });
      if (answer.kind !== "ok") throw new Error(answer.kind);
      // Merged best first; every part's own hits above the parts' highest floor.
      expect(answer.hits.length).toBeGreaterThanOrEqual(20);
      expect(answer.hits.filter((h) => h.failsFilters)).toEqual([]);
      const truth = best(filters, manyById).slice(0, 20);
      expect(answer.hits.slice(0, 20).filter((h) => truth.includes(h.productId)).length, JSON.stringify(filters)).toBeGreaterThanOrEqual(19);
      for (const h of answer.hits) expect(h.cosine).toBeCloseTo(cosine(h.productId, manyById), 5);
    }
  });
});

describe("a value set of which the other filters pass few", () => {
  // 40,000 products: section s0 (a value set) 16,000, s1 24,000 (past the most scanned, 20,000),
  // and one of five finishes (no value sets) a fifth of either, 3,200 of s0: past the candidates
  // scored exactly, and a fifth of the section's set. Of s1, zone z0 8,000 and z1 16,000 (sets on
  // either side of VALUE_SET_EF_FROM).
  const deepId = `${catalogId}-deep`;
  const zoneOf = (i: number): JsonObject => (i % 5 < 2 ? {} : { zone: i % 5 === 2 ? "z0" : "z1" });
  const deep: IndexEntry[] = Array.from({ length: 40_000 }, (_, i) => ({
    productId: `d${i}`,
    vector: randomUnit(random, DIM),
    attributes: { section: i % 5 < 2 ? "s0" : "s1", finish: `f${Math.floor(i / 5) % 5}`, rank: "NO_BOOST", ...zoneOf(i) },
    words: [],
  }));
  const deepById = new Map(deep.map((e) => [e.productId, e]));
  const deepAsk = (filters: MetadataFilter[]) =>
    index.query(deepId, { vector: query, count: 20, filters, exactUpTo: 0, expectedVersion: VERSION, servableVersionPrefix: VERSION });

  // 40,000 products with a value set each: past 180 s on the cluster when the machine is busy.
  beforeAll(async () => {
    await index.rebuild(deepId, VERSION, pages(deep));
  }, 600_000);
  afterAll(async () => {
    await index?.drop(deepId);
  });

  it("scans the set exactly with the whole filter, where HNSW would be asked five times the count", async () => {
    for (const filters of [
      [eq("section", "s0"), eq("finish", "f2")],
      [eq("finish", "f4"), eq("section", "s0")],
      [eq("section", "s0"), { field: "finish", operator: "in", value: ["f0"] } as MetadataFilter],
    ]) {
      const answer = await deepAsk(filters);
      if (answer.kind !== "ok") throw new Error(answer.kind);
      expect(answer.exact, JSON.stringify(filters)).toBe(true);
      expect(answer.hits.map((h) => h.productId), JSON.stringify(filters)).toEqual(best(filters, deepById).slice(0, 20));
      for (const h of answer.hits) expect(h.cosine).toBeCloseTo(cosine(h.productId, deepById), 5);
      for (const h of answer.hits) expect(h.attributes).toEqual(deepById.get(h.productId)!.attributes);
    }
  });

  it("searches a value set deeper the larger it is: SEARCH_EF up to VALUE_SET_EF_FROM, VALUE_SET_EF_FACTOR times at ten times that", async () => {
    // The depth grows with the logarithm of the set's size between the two.
    const efFor = (size: number) => Math.round(100 * Math.min(VALUE_SET_EF_FACTOR, 1 + (VALUE_SET_EF_FACTOR - 1) * Math.log10(Math.max(size, VALUE_SET_EF_FROM) / VALUE_SET_EF_FROM)));
    const sets = await Promise.all([valueSet("s0", "section", deepId), valueSet("s1", "section", deepId), valueSet("z0", "zone", deepId), valueSet("z1", "zone", deepId)]);
    expect(sets.map((s) => s.size)).toEqual([16_000, 24_000, 8_000, 16_000]);
    const efs = await vsimEfs(4, async () => {
      await deepAsk([eq("section", "s0")]);
      await deepAsk([eq("section", "s1")]);
      // A multi-select: each value's set asked at its own depth.
      await deepAsk([{ field: "zone", operator: "in", value: ["z0", "z1"] }]);
    }, deepId);
    expect(sets.map((s) => efFor(s.size))).toEqual([120, 138, 100, 120]);
    expect(efs.length).toBe(4);
    expect(new Map(efs)).toEqual(new Map(sets.map((s) => [s.key, efFor(s.size)])));
  });

  it("keeps HNSW over the set, post-filtered, when the other filters pass more than a quarter of it", async () => {
    // Three finishes of five: 60% of the section.
    await expectHnsw([eq("section", "s0"), { field: "finish", operator: "in", value: ["f0", "f1", "f2"] } as MetadataFilter]);
  });

  it("keeps HNSW over a set past the most scanned, however few the other filters pass", async () => {
    // A fifth of s1's 24,000, as the scanned pairs above are of s0's 16,000.
    await expectHnsw([eq("section", "s1"), eq("finish", "f2")]);
  });

  async function expectHnsw(filters: MetadataFilter[]) {
    const answer = await deepAsk(filters);
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.exact, JSON.stringify(filters)).toBe(false);
    const passed = answer.hits.filter((h) => !h.failsFilters);
    for (const h of passed) expect(matchesFilters(filters, h.attributes)).toBe(true);
    const truth = best(filters, deepById).slice(0, 10);
    expect(passed.filter((h) => truth.includes(h.productId)).length).toBeGreaterThanOrEqual(8);
  }
});
