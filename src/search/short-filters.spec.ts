import { describe, expect, it } from "vitest";
import { SCAN_PROBE_EVERY, SHORT_BEFORE_SCAN, ShortFilters } from "./short-filters.js";

describe("ShortFilters", () => {
  it("scans a filter at once after SHORT_BEFORE_SCAN short searches in a row, and not before", () => {
    const filters = new ShortFilters();
    for (let k = 0; k < SHORT_BEFORE_SCAN; k++) {
      expect(filters.scanAtOnce("a")).toBe(false);
      filters.note("a", true);
    }
    expect(filters.scanAtOnce("a")).toBe(true);
    expect(filters.scanAtOnce("b")).toBe(false);
  });

  it("starts counting again after a search that was not short", () => {
    const filters = new ShortFilters();
    filters.note("a", true);
    filters.note("a", false);
    filters.note("a", true);
    expect(filters.scanAtOnce("a")).toBe(SHORT_BEFORE_SCAN <= 1);
  });

  it("asks HNSW again every SCAN_PROBE_EVERY-th query, and keeps to it if the probe was not short", () => {
    const filters = new ShortFilters();
    for (let k = 0; k < SHORT_BEFORE_SCAN; k++) filters.note("a", true);
    const answers = Array.from({ length: 2 * SCAN_PROBE_EVERY }, () => filters.scanAtOnce("a"));
    expect(answers.map((scan, k) => (scan ? -1 : k)).filter((k) => k >= 0)).toEqual([SCAN_PROBE_EVERY - 1, 2 * SCAN_PROBE_EVERY - 1]);
    filters.note("a", false);
    expect(filters.scanAtOnce("a")).toBe(false);
  });
});
