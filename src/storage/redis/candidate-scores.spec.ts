import { describe, expect, it } from "vitest";
import type { IndexQuery } from "../../search/index.js";
import { CandidateScores, holdsAnyWord, wordsOf } from "./candidate-scores.js";

describe("holdsAnyWord", () => {
  it("finds a word only whole, anywhere in the line, whatever the spacing", () => {
    expect(holdsAnyWord("red linen shirt", ["shirt"])).toBe(true);
    expect(holdsAnyWord("red linen shirt", ["red"])).toBe(true);
    expect(holdsAnyWord("red linen shirt", ["linen"])).toBe(true);
    expect(holdsAnyWord("redwood shirts", ["red", "shirt", "wood"])).toBe(false);
    // A part of one word, then the word itself further on.
    expect(holdsAnyWord("shirtdress shirt", ["shirt"])).toBe(true);
    expect(holdsAnyWord("  acme   zeta ", ["zeta"])).toBe(true);
    expect(holdsAnyWord("", ["red"])).toBe(false);
    expect(holdsAnyWord("red", [])).toBe(false);
  });
});

describe("CandidateScores", () => {
  const vector = new Float32Array([1, 0, 0, 0]);
  const query: IndexQuery = {
    vector,
    count: 2,
    filters: [],
    exactUpTo: Infinity,
    expectedVersion: "v",
    servableVersionPrefix: "v",
    lexical: {
      vocabulary: { build: "b", size: 1 },
      words: ["linen", "acme"],
      maxProducts: 1,
      commonWordProducts: 1,
      commonProducts: 1,
      visual: vector.slice(0, 2),
      text: vector.slice(2),
    },
  };
  const lines = ["red linen shirt", "linenwear acme", "acmes wool", "wool  dress", "blue linen"];
  const element = (i: number) => Float32Array.from([Math.cos(i / 3), Math.sin(i / 3), 0, 0]);

  it("takes a candidate's words as read (a line) as it takes them split: the same hits and holders", () => {
    const asRead = new CandidateScores(query);
    const split = new CandidateScores(query);
    lines.forEach((line, i) => {
      asRead.add(`p${i}`, element(i), JSON.stringify({ n: i }), line);
      split.add(`p${i}`, element(i), { n: i }, wordsOf(line));
    });
    const [a, b] = [asRead.result(), split.result()];
    expect(a.hits).toEqual(b.hits);
    expect(a.lexical).toEqual(b.lexical);
    expect(a.lexical.map((h) => [h.productId, h.words])).toEqual([
      ["p0", ["red", "linen", "shirt"]],
      ["p1", ["linenwear", "acme"]],
      ["p4", ["blue", "linen"]],
    ]);
    expect(a.hits.map((h) => h.productId)).toEqual(["p0", "p1"]);
  });
});
