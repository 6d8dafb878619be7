import { describe, expect, it } from "vitest";
import { fewToName, NAMED_SAMPLE_PASSING, NAMED_SHARE, NAMED_UP_TO } from "./named-first-asks.js";
import { FILTER_SHARE_SAMPLE, RARE_MOST_PASSING } from "./filter-shares.js";

const ofSample = (passing: number) => passing / FILTER_SHARE_SAMPLE;

describe("fewToName", () => {
  it("names a filter few enough of the sample pass, however large the set: 1,500 estimated in a part of 500,000", () => {
    expect(fewToName(ofSample(NAMED_SAMPLE_PASSING), 500_000)).toBe(true);
    expect(fewToName(ofSample(1), 5_000_000)).toBe(true);
    expect(fewToName(0, 5_000_000)).toBe(true);
    expect(fewToName(ofSample(NAMED_SAMPLE_PASSING + 1), 500_000)).toBe(false);
  });

  it("names one passed by at most NAMED_SHARE of the set and NAMED_UP_TO of its elements", () => {
    expect(fewToName(NAMED_UP_TO / 100_000, 100_000)).toBe(true);
    expect(fewToName((NAMED_UP_TO + 100) / 100_000, 100_000)).toBe(false);
    expect(fewToName(NAMED_SHARE, NAMED_UP_TO / NAMED_SHARE)).toBe(true);
    expect(fewToName(NAMED_SHARE * 1.5, 10_000)).toBe(false);
  });

  it("names every filter the sample finds rare (SlotIndex.namable relies on it)", () => {
    expect(NAMED_SAMPLE_PASSING).toBeGreaterThanOrEqual(RARE_MOST_PASSING);
    for (let passing = 0; passing <= RARE_MOST_PASSING; passing++) expect(fewToName(ofSample(passing), 10_000_000)).toBe(true);
  });
});
