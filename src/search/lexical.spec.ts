import { describe, expect, it } from "vitest";
import { holderOrder, INEXACT_SCALE, LexicalVocabulary, lexicalSimilarity, lexicalWords, NO_LEXICAL_MATCH } from "./lexical.js";

const titles = ["Nike Men Red Polo T-shirt", "Nike Men Red Polo Tshirts", "Nike Men Striped Red Polo T-shirt", "Nike Men Blue Polo T-shirt", "Puma Men Red Polo T-shirt"];

function similarity(query: string, title: string): number {
  const vocabulary = new LexicalVocabulary("b1");
  for (const t of titles) vocabulary.add(lexicalWords(t));
  return lexicalSimilarity(vocabulary.expand(lexicalWords(query, 16)), lexicalWords(title));
}

describe("lexicalSimilarity", () => {
  it("is 1 only for the title typed whole, whatever its case, accents and hyphens", () => {
    expect(similarity("nike men red polo tshirt", "Nike Men Red Polo T-shirt")).toBe(1);
    expect(similarity("NIKÉ men red polo t-shirt", "Nike Men Red Polo T-shirt")).toBe(1);
  });

  it("keeps every near-duplicate at most INEXACT_SCALE below it: a plural, a word more, a word less, another order", () => {
    for (const title of ["Nike Men Red Polo Tshirts", "Nike Men Striped Red Polo T-shirt", "Nike Men Red Polo"]) {
      const value = similarity("nike men red polo t-shirt", title);
      expect(value, title).toBeLessThanOrEqual(INEXACT_SCALE);
      expect(value, title).toBeGreaterThan(0.6);
    }
    expect(similarity("nike men polo red t-shirt", "Nike Men Red Polo T-shirt")).toBeCloseTo(INEXACT_SCALE, 10);
  });

  it("scales the documented formula: query coverage 0.9, product coverage 0.1", () => {
    // "tshirts" is one edit from "tshirt" (0.8); the product's five words all match.
    expect(similarity("nike men red polo tshirts", "Nike Men Red Polo T-shirt")).toBeCloseTo(INEXACT_SCALE * (0.9 * (4 + 0.8) / 5 + 0.1), 10);
    // One of the product's six words unmatched.
    expect(similarity("nike men red polo t-shirt", "Nike Men Striped Red Polo T-shirt")).toBeCloseTo(INEXACT_SCALE * (0.9 + 0.1 * (5 / 6)), 10);
  });

  it("is NO_LEXICAL_MATCH for a product none of whose words the query matches", () => {
    expect(similarity("adidas", "Nike Men Red Polo T-shirt")).toBe(NO_LEXICAL_MATCH);
    expect(similarity("men", "Nike Men Red Polo T-shirt")).toBeCloseTo(INEXACT_SCALE * (0.9 + 0.1 / 5), 10);
  });
});

describe("the order a common word's holders are read in", () => {
  it("puts boosted products first, then those of fewer words", () => {
    const order = [holderOrder("NO_BOOST", 2), holderOrder("SUPER_BOOST", 9), holderOrder("BOOST", 3), holderOrder("NO_BOOST", 1), holderOrder("BOOST", 2)];
    expect([...order].sort((a, b) => a - b)).toEqual([holderOrder("SUPER_BOOST", 9), holderOrder("BOOST", 2), holderOrder("BOOST", 3), holderOrder("NO_BOOST", 1), holderOrder("NO_BOOST", 2)]);
  });

  it("takes a query's best-matched words first", () => {
    const vocabulary = new LexicalVocabulary("b1");
    vocabulary.add(["polos", "polo", "poloneck", "red"]);
    expect(vocabulary.expand(["red", "polo"]).words).toEqual(["red", "polo", "polos", "poloneck"]);
  });
});

describe("a vocabulary's remembered word matches", () => {
  it("looks a word up once for every query that repeats it, as a prefix only where it is last, and again once words are added", () => {
    const vocabulary = new LexicalVocabulary("b1");
    vocabulary.add(["red", "polo", "polos"]);
    const first = vocabulary.expand(["pol", "red"]);
    // The same word in the same place: the same matches, not looked up again.
    expect(vocabulary.expand(["pol", "polo"]).perWord[0]).toBe(first.perWord[0]);
    // Last, it is a prefix too.
    const last = vocabulary.expand(["red", "pol"]);
    expect(last.perWord[1]).not.toBe(first.perWord[0]);
    expect([...last.perWord[1]!.keys()]).toEqual(["polo", "polos"]);
    expect(vocabulary.expand(["red", "pol"]).perWord[1]).toBe(last.perWord[1]);
    vocabulary.add(["polka"]);
    const after = vocabulary.expand(["red", "pol"]);
    expect(after.perWord[1]).not.toBe(last.perWord[1]);
    expect(after.words).toContain("polka");
  });

  it("keeps a bounded number of them", () => {
    const vocabulary = new LexicalVocabulary("b1");
    vocabulary.add(["red"]);
    const oldest = vocabulary.expand(["word0", "red"]).perWord[0];
    for (let i = 1; i <= 300; i++) vocabulary.expand([`word${i}`, "red"]);
    const newest = vocabulary.expand(["word300", "red"]).perWord[0];
    expect(vocabulary.expand(["word300", "red"]).perWord[0]).toBe(newest);
    expect(vocabulary.expand(["word0", "red"]).perWord[0]).not.toBe(oldest);
  });
});
