import { describe, expect, it } from "vitest";
import { tokenize, tokenRows, type Vocabulary } from "../../src/embeddings/tokenize.js";

const vocabulary = (words: string[]): Vocabulary => {
  const ids = new Map(words.map((w, i) => [w, i]));
  return { id: (w) => ids.get(w) ?? -1 };
};

describe("tokenize", () => {
  it("lower-cases, splits on anything but letters and digits, keeps inner hyphens", () => {
    expect(tokenize("Men's T-Shirt, 2-pack (Navy) / Levi’s 501®")).toEqual(["men", "t-shirt", "2-pack", "navy", "levi", "501"]);
    expect(tokenize("  --  ")).toEqual([]);
    expect(tokenize("ÉCLAIR crème")).toEqual(["éclair", "crème"]);
  });
});

describe("tokenRows", () => {
  const v = vocabulary(["the", "t-shirt", "t-shirts", "track", "pants", "cafe", "32", "gb", "kurta", "e-mail", "shoe"]);
  const rows = (t: string) => tokenRows(t, v);

  it("finds known words directly", () => {
    expect(rows("t-shirt")).toEqual([1]);
  });
  it("maps product-title spellings to known ones", () => {
    expect(rows("tshirt")).toEqual([1]);
    expect(rows("tshirts")).toEqual([2]);
    expect(rows("trackpants")).toEqual([3, 4]);
    expect(rows("track-pants")).toEqual([3, 4]);
    expect(rows("café")).toEqual([5]);
    expect(rows("32gb")).toEqual([6, 7]);
    expect(rows("kurtas")).toEqual([8]);
    expect(rows("email")).toEqual([9]);
  });
  it("gives nothing for unknown words", () => {
    expect(rows("qxzvw")).toEqual([]);
    expect(rows("shoeqxz")).toEqual([]);
  });
});
