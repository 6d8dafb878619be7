import { describe, expect, it } from "vitest";
import { MAX_PROTOTYPE_WORDS, wordPrototypes } from "./word-prototypes.js";

const unit = (i: number) => Float32Array.from({ length: 4 }, (_, d) => (d === i % 4 ? 1 : 0));

describe("wordPrototypes", () => {
  it("keeps the most used words past the cap, ties by spelling, each the unit mean of its samples' outputs", () => {
    // 6,000 distinct words: "common" in every sample, w0000..w5999 once each, "pair" in two.
    const samples = Array.from({ length: 6000 }, (_, i) => ({
      descriptor: `common w${String(i).padStart(4, "0")}${i < 2 ? " pair" : ""}`,
      mapped: unit(i),
    }));
    const { words, vectors } = wordPrototypes(samples, 4);
    expect(words).toHaveLength(MAX_PROTOTYPE_WORDS);
    expect(words.slice(0, 4)).toEqual(["common", "pair", "w0000", "w0001"]);
    expect(words.at(-1)).toBe(`w${String(MAX_PROTOTYPE_WORDS - 3).padStart(4, "0")}`);
    // "pair": samples 0 and 1, outputs e0 and e1.
    expect([...vectors.subarray(4, 8)].map((v) => Number(v.toFixed(6)))).toEqual([0.707107, 0.707107, 0, 0]);
    // "common": every output, 1,500 of each axis.
    expect([...vectors.subarray(0, 4)].map((v) => Number(v.toFixed(6)))).toEqual([0.5, 0.5, 0.5, 0.5]);
  });

  it("leaves out samples whose output is all zero", () => {
    const { words } = wordPrototypes([{ descriptor: "blank", mapped: new Float32Array(4) }, { descriptor: "seen", mapped: unit(0) }], 4);
    expect(words).toEqual(["seen"]);
  });
});
