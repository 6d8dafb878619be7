import { describe, expect, it } from "vitest";
import { SCAN_PROBE_EVERY, SHORT_BEFORE_SCAN, ShortFilters } from "./short-filters.js";

describe("ShortFilters", () => {
  it("leaves a filter never seen short to the sample, walks it while seen short fewer than SHORT_BEFORE_SCAN times in a row, then scans", () => {
    const filters = new ShortFilters();
    expect(filters.plan("a")).toBe("sample");
    for (let k = 0; k < SHORT_BEFORE_SCAN; k++) {
      expect(filters.plan("a")).toBe(k === 0 ? "sample" : "walk");
      filters.note("a", true);
    }
    expect(filters.plan("a")).toBe("scan");
    expect(filters.plan("b")).toBe("sample");
    // A walk that gave enough of a filter never seen short leaves it to the sample.
    filters.note("b", false);
    expect(filters.plan("b")).toBe("sample");
  });

  it("starts counting again after a search that was not short, and walks while it counts", () => {
    const filters = new ShortFilters();
    filters.note("a", true);
    filters.note("a", false);
    expect(filters.plan("a")).toBe("walk");
    filters.note("a", true);
    expect(filters.plan("a")).toBe(SHORT_BEFORE_SCAN <= 1 ? "scan" : "walk");
  });

  it("asks HNSW again every SCAN_PROBE_EVERY-th query, and keeps to it if the probe was not short", () => {
    const filters = new ShortFilters();
    for (let k = 0; k < SHORT_BEFORE_SCAN; k++) filters.note("a", true);
    const plans = Array.from({ length: 2 * SCAN_PROBE_EVERY }, () => filters.plan("a"));
    expect(plans.map((plan, k) => (plan === "scan" ? -1 : k)).filter((k) => k >= 0)).toEqual([SCAN_PROBE_EVERY - 1, 2 * SCAN_PROBE_EVERY - 1]);
    filters.note("a", false);
    expect(filters.plan("a")).toBe("walk");
  });
});
