// Filters learned without field postings (src/storage/redis/filter-learning.ts, SlotIndex.learn),
// on the run's real Redis (one server, or the cluster in the "cluster" project): an eq/in filter
// asked again is learned by one exact scan on Redis's threads beside the ask that started it
// (settled() waits for it), its next asks are answered from the process's memory with no VSIM at
// all, exactly (checked against every product scored here), and a write to the catalog is in the
// very next answer, the set brought up to date from the build's write log (still no VSIM) up to
// LEARNED_CATCH_UP writes behind. MONITOR shows which VSIMs ran.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { matchesFilters } from "../../src/search/index.js";
import type { IndexAnswer, IndexEntry, IndexQuery, MetadataFilter } from "../../src/search/index.js";
import { openRedis, RedisVectorIndex, type RedisClient } from "../../src/storage/redis/index.js";
import { asksBeforeLearning } from "../../src/storage/redis/filter-learning.js";
import type { LearningOutcome } from "../../src/storage/redis/filter-learning.js";
import { LEARNED_CATCH_UP } from "../../src/storage/redis/lexical-script.js";
import { ThreadedVsim } from "../../src/storage/redis/threaded-nearest.js";
import { vectorToBytes } from "../../src/storage/fp32.js";
import { vsimsDuring } from "../support/redis-monitor.js";
import { redisEnv } from "../support/test-server.js";
import { indexQuery } from "../support/index-query.js";
import { randomUnit, seededRandom } from "../support/random.js";
import { pages } from "../support/index-pages.js";

const N = 4000;
const DIM = 16;
const COUNT = 20;
const VERSION = "learned-filters-test|v1|";
const COLOURS = ["red", "blue", "green", "black", "white", "grey", "pink", "navy", "tan", "gold"];
const random = seededRandom(41);
/** Asks of a filter of the catalog (or of its parts) before it is learned. */
const LEARN_AFTER = asksBeforeLearning(N);
/** Matches a learned set may hold: an eighth of the holder cache's room (10,000 here). */
const HELD_MOST = 1250;
const prefix = `vitrine-learned-filters-${randomBytes(4).toString("hex")}:`;
const catalogId = `learned-${randomBytes(4).toString("hex")}`;

// colour: 10% each; shop: 1% each; "brand<k>" words held by 2.5% each.
const entries: IndexEntry[] = Array.from({ length: N }, (_, i) => ({
  productId: `p${i}`,
  vector: randomUnit(random, DIM),
  attributes: { n: i, colour: COLOURS[i % 10]!, shop: `s${i % 100}`, rank: "NO_BOOST" },
  words: [`brand${i % 40}`, `w${i}`],
}));

let redis: RedisClient;
let vsimConnections: RedisClient[];
let index: RedisVectorIndex;
let vocabulary: { build: string; size: number };
/** How each learning of `index` ended, in order (its onLearning). */
const outcomes: LearningOutcome[] = [];

function queryOf(filters: MetadataFilter[], words: string[] = []): IndexQuery {
  return indexQuery({ vector: randomUnit(random, DIM), count: COUNT, version: VERSION, filters, words, vocabulary });
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let k = 0; k < a.length; k++) s += a[k]! * b[k]!;
  return s;
}

/** The query's exact answer over `list`: the best COUNT passing its filters, as ids. */
function exactIds(list: readonly IndexEntry[], query: IndexQuery): string[] {
  return list
    .filter((e) => matchesFilters(query.filters, e.attributes))
    .map((e) => ({ id: e.productId, cosine: dot(e.vector, query.vector) }))
    .sort((a, b) => b.cosine - a.cosine)
    .slice(0, query.count)
    .map((h) => h.id);
}

function ok(answer: IndexAnswer): Extract<IndexAnswer, { kind: "ok" }> {
  if (answer.kind !== "ok") throw new Error(`answered ${answer.kind}`);
  return answer;
}

/** The VSIMs Redis runs during `work` on the sets of `tag` (and its parts'): who sent each, and its arguments after the vector. */
function vsimsOf(tag: string, work: () => Promise<void>): Promise<{ client: string; args: string[] }[]> {
  return vsimsDuring(redis, (key) => key.startsWith(`${prefix}{${tag}`), work);
}

const countOf = (args: string[]) => Number(args[args.findIndex((a) => a.toUpperCase() === "COUNT") + 1]);

beforeAll(async () => {
  const config = loadConfig(redisEnv());
  const target = { url: config.redis.url, clusterNodes: config.redis.clusterNodes };
  redis = await openRedis(target);
  vsimConnections = await Promise.all([openRedis(target), openRedis(target)]);
  index = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, holderCacheEntries: 10_000, filterLearning: true, vsimConnections, onLearning: (o) => outcomes.push(o) });
  await index.rebuild(catalogId, VERSION, pages(entries));
  const read = await index.vocabulary(catalogId, undefined);
  vocabulary = { build: read.build!, size: read.words.length };
}, 120_000);

afterAll(async () => {
  await index?.drop(catalogId);
  await Promise.all([redis, ...(vsimConnections ?? [])].map((c) => c?.quit()));
});

describe("filters learned without field postings", () => {
  it("learns an eq filter once asked asksBeforeLearning times, by one exact scan on Redis's threads, then answers it exactly with no VSIM", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "navy" }];
    for (let k = 1; k < LEARN_AFTER; k++) ok(await index.query(catalogId, queryOf(filters)));
    const seen = await vsimsOf(catalogId, async () => {
      // Answered as usual, while the filter is learned beside it.
      const answer = ok(await index.query(catalogId, queryOf(filters)));
      expect(answer.hits.every((h) => h.attributes.colour === "navy")).toBe(true);
      await index.settled();
    });
    // Asked for more than a set may hold (an eighth of the holder cache): every match, on a connection of its own.
    const scans = seen.filter((v) => countOf(v.args) === HELD_MOST + 1);
    expect(scans.map((v) => v.client === "lua")).toEqual([false]);
    expect(scans[0]!.args).toContain("TRUTH");
    expect(scans[0]!.args).toContain("FILTER");
    expect(seen.length).toBeGreaterThan(scans.length);
    expect(outcomes).toEqual(["learned"]);
    for (let k = 0; k < 5; k++) {
      const query = queryOf(filters);
      const none = await vsimsOf(catalogId, async () => {
        const answer = ok(await index.query(catalogId, query));
        expect(answer.exact).toBe(true);
        expect(answer.hits.map((h) => h.productId)).toEqual(exactIds(entries, query));
        const scored = new Map(entries.map((e) => [e.productId, dot(e.vector, query.vector)]));
        for (const h of answer.hits) expect(h.cosine).toBeCloseTo(scored.get(h.productId)!, 5);
        expect(answer.hits.every((h) => h.attributes.colour === "navy")).toBe(true);
      });
      expect(none).toEqual([]);
    }
  });

  it("finds the query's words among a learned filter's matches, and only there", async () => {
    const filters: MetadataFilter[] = [{ field: "shop", operator: "in", value: ["s3", "s7"] }];
    for (let k = 0; k < LEARN_AFTER; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    // brand3 is held by products 3, 43, 83, ...: those of shops s3 (i % 100 == 3) are among them, s7's are not.
    const answer = ok(await index.query(catalogId, queryOf(filters, ["brand3"])));
    const holders = answer.lexical.map((h) => h.productId).sort();
    const expected = entries.filter((e) => e.words.includes("brand3") && ["s3", "s7"].includes(String(e.attributes.shop))).map((e) => e.productId).sort();
    expect(expected.length).toBeGreaterThan(0);
    expect(holders).toEqual(expected);
  });

  it("answers a write to the catalog at the very next ask: a new match, a product no longer matching, a removal", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "tan" }];
    for (let k = 0; k < LEARN_AFTER + 1; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    let list = [...entries];
    const write = async (change: () => Promise<void>, next: readonly IndexEntry[]) => {
      await change();
      list = [...next];
      const query = queryOf(filters);
      // Each new match goes first for this query: its vector is the query's.
      const answer = ok(await index.query(catalogId, query));
      return { query, ids: answer.hits.map((h) => h.productId) };
    };
    const query0 = queryOf(filters);
    const added: IndexEntry = { productId: "new-tan", vector: query0.vector, attributes: { n: -1, colour: "tan", shop: "s0", rank: "NO_BOOST" }, words: ["fresh"] };
    await index.upsert(catalogId, [added]);
    list = [...list, added];
    expect(ok(await index.query(catalogId, query0)).hits[0]!.productId).toBe("new-tan");

    // The best tan product for a query turns navy: gone from tan's answers at once.
    const before = await write(async () => undefined, list);
    const turned = list.find((e) => e.productId === before.ids[0])!;
    const recoloured = { ...turned, attributes: { ...turned.attributes, colour: "navy" } };
    const after = await write(
      () => index.upsert(catalogId, [recoloured]),
      list.map((e) => (e.productId === turned.productId ? recoloured : e)),
    );
    expect(after.ids).not.toContain(turned.productId);

    const removed = await write(
      () => index.remove(catalogId, ["new-tan"]),
      list.filter((e) => e.productId !== "new-tan"),
    );
    expect(removed.ids).not.toContain("new-tan");
    // Learned again once the writes stop: exact, and no VSIM.
    for (let k = 0; k < 8; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    const settled = queryOf(filters);
    const none = await vsimsOf(catalogId, async () => {
      expect(ok(await index.query(catalogId, settled)).hits.map((h) => h.productId)).toEqual(exactIds(list, settled));
    });
    expect(none).toEqual([]);
    await index.upsert(catalogId, [turned]);
  });

  it("keeps a learned set through writes: each is in the next answer, from the process's memory, with no VSIM, up to LEARNED_CATCH_UP writes behind", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "gold" }];
    for (let k = 0; k < LEARN_AFTER + 1; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    let list = [...entries];
    const entry = (id: string) => list.find((e) => e.productId === id)!;
    /** Writes, then asks with `vector` (the written product's, so that it leads when it matches): exact, and no VSIM. */
    const step = async (write: () => Promise<void>, next: IndexEntry[], vector: Float32Array) => {
      await write();
      list = next;
      const query = { ...queryOf(filters), vector };
      const seen = await vsimsOf(catalogId, async () => {
        const answer = ok(await index.query(catalogId, query));
        expect(answer.exact).toBe(true);
        expect(answer.hits.map((h) => h.productId)).toEqual(exactIds(list, query));
      });
      expect(seen).toEqual([]);
      return query;
    };
    const fresh: IndexEntry = { productId: "fresh-gold", vector: randomUnit(random, DIM), attributes: { n: -2, colour: "gold", shop: "s1", rank: "NO_BOOST" }, words: ["fresh"] };
    const added = await step(() => index.upsert(catalogId, [fresh]), [...list, fresh], fresh.vector);
    expect(exactIds(list, added)[0]).toBe("fresh-gold");
    // A navy product turns gold, a gold one navy, a gold one moves, a grey one is written unchanged.
    const [navy, gold, moved, grey] = [entry("p7"), entry("p9"), entry("p19"), entry("p5")];
    const nowGold = { ...navy, attributes: { ...navy.attributes, colour: "gold" } };
    await step(() => index.upsert(catalogId, [nowGold]), list.map((e) => (e === navy ? nowGold : e)), navy.vector);
    const nowNavy = { ...gold, attributes: { ...gold.attributes, colour: "navy" } };
    await step(() => index.upsert(catalogId, [nowNavy]), list.map((e) => (e === gold ? nowNavy : e)), gold.vector);
    const elsewhere = { ...moved, vector: randomUnit(random, DIM) };
    await step(() => index.upsert(catalogId, [elsewhere]), list.map((e) => (e === moved ? elsewhere : e)), elsewhere.vector);
    await step(() => index.upsert(catalogId, [grey]), list, grey.vector);
    // Several writes between two asks, the same product twice among them, and a removal.
    const twice = { ...fresh, vector: randomUnit(random, DIM) };
    await step(
      async () => {
        await index.upsert(catalogId, [{ ...fresh, attributes: { ...fresh.attributes, colour: "tan" } }]);
        await index.upsert(catalogId, [twice]);
        await index.remove(catalogId, ["p29"]);
      },
      list.map((e) => (e.productId === fresh.productId ? twice : e)).filter((e) => e.productId !== "p29"),
      twice.vector,
    );

    // More writes since its last ask than LEARNED_CATCH_UP: the set is dropped and the answer found in the set.
    const rewritten = list.filter((e) => e.attributes.colour === "grey").slice(0, LEARNED_CATCH_UP + 1);
    expect(rewritten).toHaveLength(LEARNED_CATCH_UP + 1);
    await index.upsert(catalogId, rewritten);
    const behind = await vsimsOf(catalogId, async () => {
      const answer = ok(await index.query(catalogId, { ...queryOf(filters), vector: twice.vector }));
      expect(answer.hits[0]!.productId).toBe("fresh-gold");
      expect(answer.hits.every((h) => h.attributes.colour === "gold")).toBe(true);
    });
    expect(behind.length).toBeGreaterThan(0);

    // Learned again; then a match written without words (it would have no holder to hold): learned anew, and found.
    for (let k = 0; k < LEARN_AFTER + 1; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    const wordless: IndexEntry = { productId: "wordless-gold", vector: randomUnit(random, DIM), attributes: { n: -3, colour: "gold", shop: "s2", rank: "NO_BOOST" }, words: [] };
    await index.upsert(catalogId, [wordless]);
    const found = await vsimsOf(catalogId, async () => {
      expect(ok(await index.query(catalogId, { ...queryOf(filters), vector: wordless.vector })).hits[0]!.productId).toBe("wordless-gold");
    });
    expect(found.length).toBeGreaterThan(0);

    await index.remove(catalogId, ["fresh-gold", "wordless-gold"]);
    await index.upsert(catalogId, [navy, gold, moved, entries[29]!]);
  });

  it("keeps a learned set to its own filter when a query with more filters brings it up to date", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "white" }];
    for (let k = 0; k < LEARN_AFTER + 1; k++) ok(await index.query(catalogId, queryOf(filters)));
    await index.settled();
    const white = entries[4]!;
    const pink = { ...white, attributes: { ...white.attributes, colour: "pink" } };
    await index.upsert(catalogId, [pink]);
    const now = entries.map((e) => (e === white ? pink : e));
    // White and a range: not learned itself, and scanned whole by the query script (a set this
    // small), which brings the white set up to date on the way.
    const ranged: MetadataFilter[] = [...filters, { field: "n", operator: "gte", value: 0 }];
    const both = { ...queryOf(ranged), vector: white.vector, exactUpTo: N };
    const seen = await vsimsOf(catalogId, async () => {
      expect(ok(await index.query(catalogId, both)).hits.map((h) => h.productId).slice(0, COUNT)).toEqual(exactIds(now, both));
    });
    expect(seen).toEqual([]);
    // The white set, asked alone: the pink product is not in it.
    const alone = { ...queryOf(filters), vector: white.vector };
    const none = await vsimsOf(catalogId, async () => {
      expect(ok(await index.query(catalogId, alone)).hits.map((h) => h.productId)).toEqual(exactIds(now, alone));
    });
    expect(none).toEqual([]);
    await index.upsert(catalogId, [white]);
  });

  it("reports a learning that Redis failed, and the filter is searched as before", async () => {
    const lone = await openRedis({ url: loadConfig(redisEnv()).redis.url, clusterNodes: loadConfig(redisEnv()).redis.clusterNodes });
    const failed: { outcome: LearningOutcome; error: unknown }[] = [];
    const other = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, holderCacheEntries: 10_000, filterLearning: true, vsimConnections: [lone], onLearning: (outcome, error) => failed.push({ outcome, error }) });
    const filters: MetadataFilter[] = [{ field: "shop", operator: "eq", value: "s61" }];
    for (let k = 1; k < LEARN_AFTER; k++) ok(await other.query(catalogId, queryOf(filters)));
    // Its only VSIM connection closed (no offline queue): the search's VSIM and the learning's scan both meet the refusal.
    lone.disconnect();
    await expect(other.query(catalogId, queryOf(filters))).rejects.toThrow(/enableOfflineQueue|closed/i);
    await other.settled();
    expect(failed.map((f) => f.outcome)).toEqual(["failed"]);
    expect(String(failed[0]!.error)).toMatch(/enableOfflineQueue|closed/i);
  });

  it("learns each part of a split catalog, the merged answer is exact, and each part's set follows the writes to it", async () => {
    const split = `${catalogId}-split`;
    await index.rebuild(split, VERSION, pages(entries), { parts: 2 });
    try {
      const filters: MetadataFilter[] = [{ field: "shop", operator: "eq", value: "s42" }];
      // One filter is learned at a time: the second part on an ask after the first's.
      for (let k = 0; k < LEARN_AFTER + 2; k++) {
        ok(await index.query(split, { ...queryOf(filters), lexical: undefined }));
        await index.settled();
      }
      const query = { ...queryOf(filters), lexical: undefined };
      const none = await vsimsOf(split, async () => {
        // Each part complete (it gave every match it has), the merge keeps them all: the first COUNT are the answer.
        const answer = ok(await index.query(split, query));
        expect(answer.hits.slice(0, COUNT).map((h) => h.productId)).toEqual(exactIds(entries, query));
      });
      expect(none).toEqual([]);
      // Writes land in one part or the other (by product): each part's set is brought up to date from its own log.
      const joined = Array.from({ length: 6 }, (_, k) => ({ ...entries[k]!, attributes: { ...entries[k]!.attributes, shop: "s42" } }));
      await index.upsert(split, joined);
      const now = entries.map((e) => joined.find((j) => j.productId === e.productId) ?? e);
      for (const j of joined) {
        const asked = { ...queryOf(filters), vector: j.vector, lexical: undefined };
        const caughtUp = await vsimsOf(split, async () => {
          expect(ok(await index.query(split, asked)).hits.slice(0, COUNT).map((h) => h.productId)).toEqual(exactIds(now, asked));
        });
        expect(caughtUp).toEqual([]);
      }
    } finally {
      await index.drop(split);
    }
  });
});

describe("a filter with more matches than a process may hold", () => {
  const many = `${catalogId}-many`;
  const wide: IndexEntry[] = Array.from({ length: 1600 }, (_, i) => ({
    productId: `m${i}`,
    vector: randomUnit(random, 8),
    attributes: { colour: i % 8 === 0 ? "rare" : "common" },
    words: [`w${i}`],
  }));

  beforeAll(async () => {
    await index.rebuild(many, VERSION, pages(wide));
  }, 120_000);

  afterAll(async () => {
    await index.drop(many);
  });

  it("is not held, and not scanned for it again at the next asks", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "common" }];
    const ask = (vector = randomUnit(random, 8)) => index.query(many, { ...queryOf(filters), vector, lexical: undefined });
    for (let k = 1; k < LEARN_AFTER; k++) ok(await ask());
    const tried = await vsimsOf(many, async () => {
      const answer = ok(await ask());
      expect(answer.hits.length).toBe(COUNT);
      expect(answer.hits.every((h) => h.attributes.colour === "common")).toBe(true);
      await index.settled();
    });
    // The query asked as usual, and the scan for every match, which found more than may be held.
    expect(tried.map((v) => countOf(v.args)).sort((a, b) => a - b)).toEqual([COUNT, HELD_MOST + 1]);
    expect(outcomes.at(-1)).toBe("too_many");
    const later = await vsimsOf(many, async () => {
      for (let k = 0; k < 5; k++) ok(await ask());
    });
    expect(later.map((v) => countOf(v.args))).toEqual(Array(5).fill(COUNT));
  });

  it("sends a learning scan aside: searches meanwhile leave its connection alone", async () => {
    const threaded = new ThreadedVsim(vsimConnections);
    const [vectors, meta] = [`${prefix}{${many}}:vectors`, `${prefix}{${many}}:meta`];
    const vector = () => vectorToBytes(randomUnit(random, 8));
    const seen = await vsimsOf(many, async () => {
      const scan = threaded.nearest(vectors, meta, vector(), { count: HELD_MOST + 1, ef: undefined, filter: { expression: '.colour == "common"', ef: 100 } }, { aside: true });
      const searches = Array.from({ length: 4 }, () => threaded.nearest(vectors, meta, vector(), { count: COUNT, ef: 100 }));
      await Promise.all([scan, ...searches]);
    });
    const scanClient = seen.find((v) => countOf(v.args) === HELD_MOST + 1)!.client;
    const searchClients = seen.filter((v) => countOf(v.args) === COUNT).map((v) => v.client);
    expect(searchClients).toHaveLength(4);
    expect(searchClients).not.toContain(scanClient);
    // Once it is done, searches take every connection in turn again.
    const after = await vsimsOf(many, async () => {
      await Promise.all(Array.from({ length: 4 }, () => threaded.nearest(vectors, meta, vector(), { count: COUNT, ef: 100 })));
    });
    expect(after.map((v) => v.client)).toContain(scanClient);
  });

  it("while a rarer filter of the same set is learned: all of its matches, though there are more than FILTER-EF", async () => {
    const filters: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "rare" }];
    // COUNT 1: FILTER-EF 100, fewer than the 200 matches.
    const ask = (vector = randomUnit(random, 8)) => index.query(many, { ...queryOf(filters), vector, count: 1, lexical: undefined });
    for (let k = 0; k < LEARN_AFTER; k++) ok(await ask());
    await index.settled();
    for (let k = 0; k < 5; k++) {
      const vector = randomUnit(random, 8);
      const none = await vsimsOf(many, async () => {
        expect(ok(await ask(vector)).hits.map((h) => h.productId)).toEqual(exactIds(wide, { ...queryOf(filters), vector, count: 1 }));
      });
      expect(none).toEqual([]);
    }
  });
});

describe("a learned set at its largest: 12,000 matches a catalog (a cache of 100,000, whose eighth is more)", () => {
  const large = `${catalogId}-large`;
  const MOST = 12_000;
  // "wide": exactly MOST matches (held); "over": one more (never held).
  const items: IndexEntry[] = Array.from({ length: MOST + 600 }, (_, i) => ({
    productId: `l${i}`,
    vector: randomUnit(random, 8),
    attributes: { band: i < MOST ? "wide" : "narrow", tone: i <= MOST ? "over" : "under" },
    words: [`w${i}`],
  }));
  let roomy: RedisVectorIndex;
  const learned: LearningOutcome[] = [];

  beforeAll(async () => {
    roomy = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, holderCacheEntries: 100_000, filterLearning: true, vsimConnections, onLearning: (o) => learned.push(o) });
    await roomy.rebuild(large, VERSION, pages(items));
  }, 180_000);

  afterAll(async () => {
    await roomy?.drop(large);
  });

  const ask = (filters: MetadataFilter[], vector = randomUnit(random, 8)) => roomy.query(large, { ...queryOf(filters), vector, lexical: undefined });
  /** The VSIMs of the asks that make `filters` learned, its learning included. */
  const learning = (filters: MetadataFilter[]) =>
    vsimsOf(large, async () => {
      for (let k = 0; k < asksBeforeLearning(items.length); k++) ok(await ask(filters));
      await roomy.settled();
    });

  it("holds a filter of 12,000 matches, answers it exactly with no VSIM, and lets it go once a write takes it past 12,000", async () => {
    const filters: MetadataFilter[] = [{ field: "band", operator: "eq", value: "wide" }];
    expect((await learning(filters)).map((v) => countOf(v.args))).toContain(MOST + 1);
    expect(learned).toEqual(["learned"]);
    const vector = randomUnit(random, 8);
    const none = await vsimsOf(large, async () => {
      expect(ok(await ask(filters, vector)).hits.map((h) => h.productId)).toEqual(exactIds(items, { ...queryOf(filters), vector }));
    });
    expect(none).toEqual([]);
    // One more match: brought up to date, this answer is exact still, and the set is let go after it.
    const joined = { ...items[MOST + 1]!, attributes: { ...items[MOST + 1]!.attributes, band: "wide" }, vector };
    await roomy.upsert(large, [joined]);
    const now = items.map((e) => (e.productId === joined.productId ? joined : e));
    const caughtUp = await vsimsOf(large, async () => {
      expect(ok(await ask(filters, vector)).hits.map((h) => h.productId)).toEqual(exactIds(now, { ...queryOf(filters), vector }));
    });
    expect(caughtUp).toEqual([]);
    const after = await vsimsOf(large, async () => {
      expect(ok(await ask(filters)).hits.every((h) => h.attributes.band === "wide")).toBe(true);
    });
    expect(after.length).toBeGreaterThan(0);
    await roomy.upsert(large, [items[MOST + 1]!]);
  }, 60_000);

  it("does not hold a filter of 12,001 matches", async () => {
    const filters: MetadataFilter[] = [{ field: "tone", operator: "eq", value: "over" }];
    expect((await learning(filters)).map((v) => countOf(v.args))).toContain(MOST + 1);
    expect(learned.at(-1)).toBe("too_many");
    const later = await vsimsOf(large, async () => {
      for (let k = 0; k < 3; k++) ok(await ask(filters));
    });
    expect(later.map((v) => countOf(v.args))).toEqual(Array(3).fill(COUNT));
  }, 60_000);
});
