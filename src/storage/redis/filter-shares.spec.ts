import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../catalogs/index.js";
import type { MetadataFilter } from "../../search/index.js";
import { FILTER_SHARE_SAMPLE, FilterShares, RARE_MOST_PASSING, SAMPLE_CHARS_KEPT } from "./filter-shares.js";

const navy: MetadataFilter[] = [{ field: "colour", operator: "eq", value: "navy" }];
/** A tenth navy, the rest red. */
const tenthNavy = (size: number): JsonObject[] => Array.from({ length: size }, (_, i) => ({ colour: i % 10 === 0 ? "navy" : "red" }));

/** A reader over `sample`, counting its reads, and a clock the test moves. */
function setup(sample: (size: number) => Promise<JsonObject[]>) {
  const clock = { now: 0 };
  const reads: string[] = [];
  const shares = new FilterShares(
    (tag, size) => {
      reads.push(tag);
      return sample(size);
    },
    () => clock.now,
  );
  return { shares, reads, clock };
}

describe("FilterShares", () => {
  it("knows nothing until a sample is read, reads one per tag at a time, then answers from it", async () => {
    const { shares, reads } = setup(async (size) => tenthNavy(size));
    expect(shares.share("t", navy)).toBeUndefined();
    expect(shares.share("t", navy)).toBeUndefined();
    await shares.settled();
    expect(reads).toEqual(["t"]);
    expect(shares.share("t", navy)).toBeCloseTo(0.1, 5);
    expect(shares.share("t", [])).toBe(1);
    expect(reads).toEqual(["t"]);
  });

  it("names the fields every sampled element holding them holds as a string, reading a sample for it as share() does", async () => {
    const { shares, reads } = setup(async (): Promise<JsonObject[]> => [
      { colour: "navy", size: "M", price: 40, tags: ["a"] },
      { colour: "red", size: 9, price: 40 },
      { colour: "red", brand: "acme" },
    ]);
    expect(shares.stringFields("t")).toEqual(new Set());
    await shares.settled();
    expect(reads).toEqual(["t"]);
    expect(shares.stringFields("t")).toEqual(new Set(["colour", "brand"]));
  });

  it("calls a filter rare when at most RARE_MOST_PASSING of a full sample pass it, and none while no full sample is held", async () => {
    let navies = RARE_MOST_PASSING;
    let size = FILTER_SHARE_SAMPLE;
    const { shares, clock } = setup(async () => Array.from({ length: size }, (_, i) => ({ colour: i < navies ? "navy" : "red" })));
    expect(shares.rare("t", navy)).toBe(false);
    await shares.settled();
    expect(shares.rare("t", navy)).toBe(true);
    expect(shares.rare("t", [{ field: "colour", operator: "eq", value: "red" }])).toBe(false);
    // One more passing: not rare; the count of each filter is the new sample's.
    navies = RARE_MOST_PASSING + 1;
    clock.now += 6 * 60_000;
    shares.share("t", navy);
    await shares.settled();
    expect(shares.rare("t", navy)).toBe(false);
    // A set smaller than the sample (all of it read): a walk's shortfall is not told from it.
    navies = 0;
    size = FILTER_SHARE_SAMPLE - 1;
    clock.now += 6 * 60_000;
    shares.share("t", navy);
    await shares.settled();
    expect(shares.share("t", navy)).toBe(0);
    expect(shares.rare("t", navy)).toBe(false);
  });

  it("asks for FILTER_SHARE_SAMPLE elements, and has no share of an empty set", async () => {
    const sizes: number[] = [];
    const { shares } = setup(async (size) => {
      sizes.push(size);
      return [];
    });
    shares.share("t", navy);
    await shares.settled();
    expect(sizes).toEqual([FILTER_SHARE_SAMPLE]);
    expect(shares.share("t", navy)).toBeUndefined();
  });

  it("reads a sample again once it is five minutes old, answering from the old one meanwhile", async () => {
    let navyShare = 0.1;
    const { shares, reads, clock } = setup(async (size) => Array.from({ length: size }, (_, i) => ({ colour: i < size * navyShare ? "navy" : "red" })));
    shares.share("t", navy);
    await shares.settled();
    clock.now += 4 * 60_000;
    expect(shares.share("t", navy)).toBeCloseTo(0.1, 5);
    expect(reads).toHaveLength(1);
    navyShare = 0.5;
    clock.now += 2 * 60_000;
    expect(shares.share("t", navy)).toBeCloseTo(0.1, 5);
    await shares.settled();
    expect(reads).toHaveLength(2);
    expect(shares.share("t", navy)).toBeCloseTo(0.5, 5);
  });

  it("after a failed read, waits ten seconds before the next", async () => {
    let fail = true;
    const { shares, reads, clock } = setup(async (size) => {
      if (fail) throw new Error("Redis away");
      return tenthNavy(size);
    });
    shares.share("t", navy);
    await shares.settled();
    expect(shares.share("t", navy)).toBeUndefined();
    expect(reads).toHaveLength(1);
    fail = false;
    clock.now += 10_001;
    shares.share("t", navy);
    await shares.settled();
    expect(reads).toHaveLength(2);
    expect(shares.share("t", navy)).toBeCloseTo(0.1, 5);
  });

  it("keeps the samples of the 64 tags asked most recently", async () => {
    const { shares, reads } = setup(async (size) => tenthNavy(size));
    for (let t = 0; t < 257; t++) {
      shares.share(`t${t}`, navy);
      await shares.settled();
      // t0 asked again each time: it stays.
      shares.share("t0", navy);
    }
    expect(reads).toHaveLength(257);
    expect(shares.share("t0", navy)).toBeCloseTo(0.1, 5);
    expect(shares.share("t1", navy)).toBeUndefined();
    expect(shares.share("t256", navy)).toBeCloseTo(0.1, 5);
  });

  it("keeps no more than SAMPLE_CHARS_KEPT characters of attributes in all, the least recently asked going first, but always the latest", async () => {
    // Each sample four tenths of the budget: two fit, a third pushes out the one asked least recently.
    const text = "x".repeat(Math.ceil((0.4 * SAMPLE_CHARS_KEPT) / FILTER_SHARE_SAMPLE));
    let huge = false;
    const { shares } = setup(async (size) => Array.from({ length: size }, () => ({ colour: "navy", text: huge ? text + text + text : text })));
    for (const tag of ["a", "b"]) {
      shares.share(tag, navy);
      await shares.settled();
    }
    shares.share("a", navy);
    shares.share("c", navy);
    await shares.settled();
    expect(["a", "b", "c"].map((tag) => shares.share(tag, navy))).toEqual([1, undefined, 1]);
    // One sample past the budget alone is kept, alone.
    huge = true;
    shares.share("d", navy);
    await shares.settled();
    expect(["a", "c", "d"].map((tag) => shares.share(tag, navy))).toEqual([undefined, undefined, 1]);
  });
});
