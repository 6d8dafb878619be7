import { describe, expect, it } from "vitest";
import { fewToName, NAMED_SAMPLE_PASSING, NAMED_SHARE, NAMED_UP_TO, namedInsteadOfScan, SCAN_ELEMENTS_PER_NAMED } from "./named-first-asks.js";
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

  it("names every filter the sample finds rare (SlotIndex.namedUpTo relies on it)", () => {
    expect(NAMED_SAMPLE_PASSING).toBeGreaterThanOrEqual(RARE_MOST_PASSING);
    for (let passing = 0; passing <= RARE_MOST_PASSING; passing++) expect(fewToName(ofSample(passing), 10_000_000)).toBe(true);
  });
});

describe("namedInsteadOfScan", () => {
  const most = 500_000 / SCAN_ELEMENTS_PER_NAMED;

  it("names a filter asked to be scanned up to one product in SCAN_ELEMENTS_PER_NAMED of the set: 2,500 in a part of 500,000", () => {
    expect(namedInsteadOfScan(500_000, ofSample(8), true)).toBe(most);
    expect(namedInsteadOfScan(100_000, undefined, true)).toBe(100_000 / SCAN_ELEMENTS_PER_NAMED);
    expect(namedInsteadOfScan(1_200, undefined, true)).toBe(6);
  });

  it("does not ask the store of a filter the sample finds passed by more than twice as many", () => {
    expect(namedInsteadOfScan(500_000, (2 * most) / 500_000, true)).toBe(most);
    expect(namedInsteadOfScan(500_000, ofSample(11), true)).toBe(0);
    expect(namedInsteadOfScan(100_000, 0.02, true)).toBe(0);
  });

  it("names at its first ask a filter at most 5 of the sample's 1,000 pass, up to as many: a walk would often come up short", () => {
    const passing = FILTER_SHARE_SAMPLE / SCAN_ELEMENTS_PER_NAMED;
    expect(passing).toBe(5);
    expect(namedInsteadOfScan(500_000, ofSample(passing), false)).toBe(most);
    expect(namedInsteadOfScan(500_000, ofSample(passing + 1), false)).toBe(0);
    // Not before the sample is read: the walk tells.
    expect(namedInsteadOfScan(500_000, undefined, false)).toBe(0);
  });

  it("does not in a set so small that its scan costs less than one read", () => {
    expect(namedInsteadOfScan(SCAN_ELEMENTS_PER_NAMED - 1, 0, true)).toBe(0);
    expect(namedInsteadOfScan(SCAN_ELEMENTS_PER_NAMED - 1, 0, false)).toBe(0);
  });
});
