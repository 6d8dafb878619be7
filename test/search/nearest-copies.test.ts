// What queries read of their nearest elements, copied by the process (src/storage/redis/
// nearest-copies.ts) for queries whose VSIM runs on a connection of its own: a query whose nearest
// elements are all held takes one round trip (the build's check and the writes since go in the
// VSIM's own pipeline), and answers what the query script alone answers (hits and lexical holders),
// with and without a common word, through writes, removals, more writes than the log keeps and a
// rebuild, on the run's real Redis (one server, or the cluster in the "cluster" project).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import type { IndexAnswer, IndexEntry, IndexQuery } from "../../src/search/index.js";
import { forEachPrimary, openRedis, RedisVectorIndex, type RedisClient } from "../../src/storage/redis/index.js";
import { LEARNED_CATCH_UP } from "../../src/storage/redis/lexical-script.js";
import { monitorCommands } from "../support/redis-monitor.js";
import { redisEnv } from "../support/test-server.js";
import { indexQuery } from "../support/index-query.js";
import { randomUnit, seededRandom } from "../support/random.js";
import { pages } from "../support/index-pages.js";

const N = 3000;
const DIM = 16;
const COUNT = 10;
const VERSION = "nearest-copies-test|v1|";
const random = seededRandom(31);
const catalogId = `nearest-copies-${randomBytes(4).toString("hex")}`;
const prefix = `vitrine-nearest-copies-${randomBytes(4).toString("hex")}:`;

const entries: IndexEntry[] = Array.from({ length: N }, (_, i) => ({
  productId: `p${i}`,
  vector: randomUnit(random, DIM),
  attributes: { n: i, rank: "NO_BOOST", colour: i % 2 === 0 ? "red" : "blue" },
  // "every" is held by half the products: a common word (past RANKED_FROM).
  words: [...(i % 2 === 0 ? ["every"] : []), `brand${i % 40}`, `w${i}`],
}));

let redis: RedisClient;
let vsimConnections: RedisClient[];
let threaded: RedisVectorIndex;
let scripted: RedisVectorIndex;
let vocabulary: { build: string; size: number };

async function readVocabulary(): Promise<void> {
  const read = await threaded.vocabulary(catalogId, undefined);
  vocabulary = { build: read.build!, size: read.words.length };
}

function queryOf(vector: Float32Array, words: string[]): IndexQuery {
  return indexQuery({ vector, count: COUNT, version: VERSION, words, vocabulary });
}

function hitsOf(answer: IndexAnswer) {
  if (answer.kind !== "ok") throw new Error(`answered ${answer.kind}`);
  return answer.hits.map((h) => ({ productId: h.productId, cosine: Math.round(h.cosine * 1e6), attributes: h.attributes }));
}

function holdersOf(answer: IndexAnswer) {
  if (answer.kind !== "ok") throw new Error(`answered ${answer.kind}`);
  return answer.lexical.map((h) => ({ productId: h.productId, words: [...h.words].sort(), attributes: h.attributes })).sort((a, b) => (a.productId < b.productId ? -1 : 1));
}

/** Both indexes' answers, which must agree, and the commands clients sent for the threaded one. */
async function ask(query: IndexQuery): Promise<{ hits: ReturnType<typeof hitsOf>; holders: ReturnType<typeof holdersOf>; sent: { client: string; name: string }[] }> {
  const sent: { client: string; name: string }[] = [];
  const monitors = await forEachPrimary(redis, (node) =>
    monitorCommands(node.options, (args, client) => {
      if (client !== "lua" && args.some((a) => a.startsWith(prefix))) sent.push({ client, name: args[0]!.toUpperCase() });
    }),
  );
  let answer: IndexAnswer;
  try {
    answer = (await threaded.query(catalogId, query)) as IndexAnswer;
    // MONITOR's lines may trail the replies.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    await Promise.all(monitors.map((m) => m.stop()));
  }
  const alone = (await scripted.query(catalogId, query)) as IndexAnswer;
  const [hits, holders] = [hitsOf(answer), holdersOf(answer)];
  expect(hits).toEqual(hitsOf(alone));
  expect(holders).toEqual(holdersOf(alone));
  return { hits, holders, sent };
}

/** A script's call: EVAL the first time a connection sends it in a pipeline (ioredis), then EVALSHA. */
const script = expect.stringMatching(/^EVAL(SHA)?$/);

/**
 * One round trip: every command from one connection, the check after the VSIM; ahead of it the
 * query script naming the words' holders, or the build's HGET once they are held (held-holders.ts:
 * the catalog took no write for a second).
 */
function oneRoundTrip(sent: { client: string; name: string }[], words: boolean): void {
  expect(new Set(sent.map((s) => s.client)).size).toBe(1);
  expect(sent.map((s) => s.name)).toEqual([words ? expect.stringMatching(/^(EVAL(SHA)?|HGET)$/) : "HGET", "VSIM", script]);
}

beforeAll(async () => {
  const config = loadConfig(redisEnv());
  const target = { url: config.redis.url, clusterNodes: config.redis.clusterNodes };
  redis = await openRedis(target);
  vsimConnections = await Promise.all([openRedis(target), openRedis(target)]);
  threaded = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, holderCacheEntries: 10_000, vsimConnections });
  scripted = new RedisVectorIndex(redis, { keyPrefix: prefix, ef: 100, holderCacheEntries: 10_000 });
  await threaded.rebuild(catalogId, VERSION, pages(entries));
  await readVocabulary();
}, 120_000);

afterAll(async () => {
  await threaded?.drop(catalogId);
  for (const connection of [redis, ...(vsimConnections ?? [])]) connection?.disconnect();
});

describe("copies of the nearest elements held by the process", () => {
  it("answers a query whose nearest elements it holds in one round trip, with words, a common word and none", async () => {
    // Tells the index the set's size: its queries' VSIMs go on connections of their own from then on.
    await threaded.query(catalogId, queryOf(randomUnit(random, DIM), []));
    for (const words of [[], ["brand3"], ["every", "brand5"]]) {
      const query = queryOf(randomUnit(random, DIM), words);
      // A common word not yet seen in the catalog is answered by the script alone, once.
      if (words.includes("every")) await threaded.query(catalogId, query);
      const first = await ask(query);
      expect(new Set(first.sent.map((s) => s.client)).size, "hits not yet held: a second call").toBe(2);
      oneRoundTrip((await ask(query)).sent, words.length > 0);
    }
  });

  it("answers a write, a removal and a filter at the next ask, still in one round trip", async () => {
    const query = queryOf(randomUnit(random, DIM), []);
    await threaded.query(catalogId, query);
    const before = (await ask(query)).hits;
    const top = entries[Number(before[0]!.productId.slice(1))]!;
    await threaded.upsert(catalogId, [{ ...top, attributes: { ...top.attributes, colour: "green" } }]);
    const written = await ask(query);
    expect(written.hits[0]!.attributes.colour).toBe("green");
    // The written product's attributes are read again; the rest are held.
    expect(written.sent.map((s) => s.name)).toEqual(["HGET", "VSIM", script, script]);
    oneRoundTrip((await ask(query)).sent, false);

    await threaded.remove(catalogId, [before[1]!.productId]);
    const removed = await ask(query);
    expect(removed.hits.map((h) => h.productId)).not.toContain(before[1]!.productId);
    // A filter pushed down: the held attributes are what it is checked against.
    const filtered = { ...query, filters: [{ field: "colour", operator: "in" as const, value: ["green", "red"] }] };
    await threaded.query(catalogId, filtered);
    expect((await ask(filtered)).hits.map((h) => h.productId)).toContain(top.productId);
    await threaded.upsert(catalogId, [top, entries[Number(before[1]!.productId.slice(1))]!]);
  });

  it("drops what it holds when more products were written since than the write log keeps", async () => {
    const query = queryOf(randomUnit(random, DIM), []);
    await threaded.query(catalogId, query);
    const before = (await ask(query)).hits;
    const changed = entries.slice(0, LEARNED_CATCH_UP + 50).map((e) => ({ ...e, attributes: { ...e.attributes, colour: "teal" } }));
    const hitIds = new Set(before.map((h) => h.productId));
    changed.push(...entries.filter((e) => hitIds.has(e.productId)).map((e) => ({ ...e, attributes: { ...e.attributes, colour: "teal" } })));
    await threaded.upsert(catalogId, changed);
    const after = await ask(query);
    for (const hit of after.hits) expect(hit.attributes.colour).toBe("teal");
    expect(new Set(after.sent.map((s) => s.client)).size).toBe(2);
    oneRoundTrip((await ask(query)).sent, false);
    await threaded.upsert(catalogId, entries.filter((e) => changed.some((c) => c.productId === e.productId)));
  });

  it("follows a product's words: a nearest element that took or gave up a common word", async () => {
    // The products removed and written again above added their words to the vocabulary again.
    await readVocabulary();
    const query = queryOf(randomUnit(random, DIM), ["every"]);
    await threaded.query(catalogId, query);
    const before = await ask(query);
    oneRoundTrip((await ask(query)).sent, true);
    // The first hit gives up the word, or takes it.
    const top = entries[Number(before.hits[0]!.productId.slice(1))]!;
    const words = top.words.includes("every") ? top.words.filter((w) => w !== "every") : ["every", ...top.words];
    await threaded.upsert(catalogId, [{ ...top, words }]);
    const after = await ask(query);
    expect(after.holders.some((h) => h.productId === top.productId)).toBe(words.includes("every"));
    oneRoundTrip((await ask(query)).sent, true);
    await threaded.upsert(catalogId, [top]);
  });

  it("answers from a new build once the catalog is rebuilt", async () => {
    const query = queryOf(randomUnit(random, DIM), []);
    await threaded.query(catalogId, query);
    await ask(query);
    await threaded.rebuild(catalogId, VERSION, pages(entries.map((e) => ({ ...e, attributes: { ...e.attributes, colour: "rebuilt" } }))));
    await readVocabulary();
    const after = await ask(query);
    for (const hit of after.hits) expect(hit.attributes.colour).toBe("rebuilt");
    oneRoundTrip((await ask(query)).sent, false);
  });
});
