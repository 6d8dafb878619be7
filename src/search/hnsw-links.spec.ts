import { describe, expect, it } from "vitest";
import { hnswMFor, LARGE_SET_M, SMALL_SET_M, unfilteredEfFor } from "./hnsw-links.js";

describe("hnswMFor", () => {
  it("auto: 16 for a set built for up to largeFrom elements, 32 past it", () => {
    expect([SMALL_SET_M, LARGE_SET_M]).toEqual([16, 32]);
    expect(hnswMFor("auto", 100_000, 0)).toBe(16);
    expect(hnswMFor("auto", 100_000, 100_000)).toBe(16);
    expect(hnswMFor("auto", 100_000, 100_001)).toBe(32);
    // A catalog of 1M in the default two parts: sets of 500,000.
    expect(hnswMFor("auto", 100_000, 500_000)).toBe(32);
  });

  it("a number is every build's, whatever the size", () => {
    expect(hnswMFor(24, 100_000, 10)).toBe(24);
    expect(hnswMFor(16, 100_000, 1_000_000)).toBe(16);
  });
});

describe("unfilteredEfFor", () => {
  const settings = { ef: 250, efLarge: 750, largeFrom: 100_000 };

  it("SEARCH_EF up to largeFrom elements, SEARCH_EF_LARGE past it and while the size is not known", () => {
    expect(unfilteredEfFor(settings, 2_001)).toBe(250);
    expect(unfilteredEfFor(settings, 100_000)).toBe(250);
    expect(unfilteredEfFor(settings, 100_001)).toBe(750);
    expect(unfilteredEfFor(settings, 500_000)).toBe(750);
    expect(unfilteredEfFor(settings, undefined)).toBe(750);
  });

  it("a large set never walks shallower than a small one", () => {
    expect(unfilteredEfFor({ ...settings, ef: 900 }, 500_000)).toBe(900);
  });
});
