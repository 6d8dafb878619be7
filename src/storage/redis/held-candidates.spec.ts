import { describe, expect, it } from "vitest";
import type { IndexQuery } from "../../search/index.js";
import type { MetadataFilter } from "../../search/filters.js";
import { CandidateScores } from "./candidate-scores.js";
import { HeldCandidates } from "./held-candidates.js";
import type { Candidate } from "./held-candidates.js";

const DIMS = 12;
const VOCABULARY = ["red", "blue", "linen", "wool", "shirt", "dress", "acme", "zeta"];

/** Deterministic candidates: unit elements, a price, and two or three words of VOCABULARY. */
function candidates(n: number, seed = 1, from = 0): Candidate[] {
  let state = seed;
  const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return Array.from({ length: n }, (_, i) => {
    const element = Float32Array.from({ length: DIMS }, () => random() - 0.5);
    const length = Math.hypot(...element);
    const words = Array.from({ length: 2 + (i % 2) }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]!);
    return { productId: `p${from + i}`, element: element.map((x) => x / length), attributes: { price: Math.floor(random() * 100) }, words };
  });
}

function query(count: number, words?: string[], filters: MetadataFilter[] = []): IndexQuery {
  const vector = Float32Array.from({ length: DIMS - 2 }, (_, i) => Math.sin(i + 1)); // trailing dims not scored
  const lexical = words && {
    vocabulary: { build: "b", size: 1 },
    words,
    maxProducts: 1,
    commonWordProducts: 1,
    commonProducts: 1,
    visual: vector.slice(0, 6),
    text: vector.slice(6),
  };
  return { vector, count, filters, exactUpTo: Infinity, expectedVersion: "v", servableVersionPrefix: "v", ...(lexical ? { lexical } : {}) };
}

/** The same candidates scored one by one, as candidates read whole are. */
function scoredOneByOne(held: readonly Candidate[], q: IndexQuery): ReturnType<CandidateScores["result"]> {
  const scores = new CandidateScores(q);
  for (const c of held) scores.add(c.productId, c.element, c.attributes, c.words);
  return scores.result();
}

const byId = <T extends { productId: string }>(hits: T[]) => [...hits].sort((a, b) => (a.productId < b.productId ? -1 : 1));

describe("HeldCandidates", () => {
  it("scores as the candidates scored one by one: the same hits in order, holders and completeness", () => {
    const all = candidates(500);
    const held = new HeldCandidates(all);
    expect(held.size).toBe(500);
    for (const q of [query(10), query(10, ["linen", "nowhere"]), query(600, ["acme"])]) {
      const packed = held.score(q, true);
      const oneByOne = scoredOneByOne(all, q);
      expect(packed.hits.map((h) => [h.productId, h.cosine])).toEqual(oneByOne.hits.map((h) => [h.productId, h.cosine]));
      expect(packed.complete).toBe(oneByOne.complete);
      expect(byId(packed.lexical)).toEqual(byId(oneByOne.lexical));
    }
    expect(held.score(query(10, ["linen"]), true).lexical.length).toBeGreaterThan(0);
    expect(held.score(query(10, ["nowhere"]), true).lexical).toEqual([]);
    expect(held.score(query(600), true).complete).toBe(true);
    expect(held.score(query(499), true).complete).toBe(false);
  });

  it("checks the filters when the postings did not decide them all", () => {
    const all = candidates(200);
    const cheap: MetadataFilter[] = [{ field: "price", operator: "lt", value: 20 }];
    const scored = new HeldCandidates(all).score(query(300, ["shirt"], cheap), false);
    const passing = all.filter((c) => (c.attributes.price as number) < 20);
    expect(scored.hits.map((h) => h.productId).sort()).toEqual(passing.map((c) => c.productId).sort());
    expect(scored.lexical.every((h) => (h.attributes.price as number) < 20 && h.words.includes("shirt"))).toBe(true);
    expect(byId(scored.lexical)).toEqual(byId(scoredOneByOne(passing, query(300, ["shirt"])).lexical));
  });

  it("brought up to date: written products leave, those still passing come back as they are now", () => {
    const all = candidates(100);
    const held = new HeldCandidates(all);
    const rewritten = candidates(5, 7, 10); // p10..p14, new elements and words
    held.update(["p3", "p10", "p11", "p12", "p13", "p14", "p999"], rewritten);
    expect(held.size).toBe(99);
    const now = [...all.filter((c) => !/^p(3|1[0-4])$/.test(c.productId)), ...rewritten];
    for (const q of [query(100, ["wool", "zeta"]), query(5, ["red"])]) {
      const scored = held.score(q, true);
      const expected = scoredOneByOne(now, q);
      expect(scored.hits.map((h) => [h.productId, h.cosine])).toEqual(expected.hits.map((h) => [h.productId, h.cosine]));
      expect(byId(scored.lexical)).toEqual(byId(expected.lexical));
    }
  });

  it("packs its rows once more are gone than held, and scores the same after", () => {
    const held = new HeldCandidates(candidates(400));
    let now = candidates(400);
    // Rounds of writes: each takes 30 out and brings back 10 rewritten, until most rows are gone.
    for (let round = 0; round < 12; round++) {
      const out = now.slice(0, 30).map((c) => c.productId);
      const back = candidates(10, 100 + round, round * 1000 + 5000);
      held.update(out, back);
      now = [...now.slice(30), ...back];
      const q = query(20, ["dress", "acme"]);
      expect(held.size).toBe(now.length);
      expect(held.score(q, true).hits).toEqual(scoredOneByOne(now, q).hits);
      expect(byId(held.score(q, true).lexical)).toEqual(byId(scoredOneByOne(now, q).lexical));
    }
    // 360 taken out of the first 400 rows: packed at least once on the way.
    expect((held as unknown as { ids: string[] }).ids.length).toBeLessThan(400 + 120);
  });

  it("holds elements of any length: shorter ones are zeros past their end", () => {
    const short = { productId: "s", element: new Float32Array([1, 0, 0]), attributes: {}, words: ["red"] };
    const long = candidates(3);
    const held = new HeldCandidates([short, ...long]);
    const q = query(10, ["red"]);
    const hits = held.score(q, true).hits;
    expect(hits.find((h) => h.productId === "s")!.cosine).toBeCloseTo(q.vector[0]! / Math.hypot(...q.vector), 6);
    expect(hits.filter((h) => h.productId !== "s")).toEqual(scoredOneByOne(long, q).hits);
  });
});
