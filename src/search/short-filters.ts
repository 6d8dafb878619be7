// Filters whose approximate search keeps coming up short. The index's HNSW search with a filter
// pushed down (no field postings) stops after a bounded walk; a filter passed by few products
// (0.1% of a catalog) leaves it short of the hits asked, and the searcher then scans exactly. The
// walk is wasted: at 100k, about 35 ms of Redis before a 70 ms scan (README "Filtered search:
// selective filters without postings"). A storefront asks the same filters again (a category
// page, a facet value), so a filter that came up short the last few times it was asked of a
// catalog is scanned at once, and now and then asked of HNSW again in case it no longer comes up
// short (the catalog grew, or its products changed). A filter not yet seen short is left to the
// index's sample of the catalog, which scans it at once when few enough pass it (a rare brand's
// first ask); that counts as one short search, so its next search walks, and a rare filter that
// goes with its queries' own neighbourhood (a brand asked by name) is walked from then on instead
// of scanned, while one that comes up short again is scanned at once.

/** Approximate searches in a row that came up short before a filter is scanned at once. */
export const SHORT_BEFORE_SCAN = 2;
/** Of the queries of a filter scanned at once, every this-many-th asks HNSW again. */
export const SCAN_PROBE_EVERY = 64;
/** Filters remembered per process; past it, the memory starts again. */
const FILTERS_KEPT = 10_000;

export class ShortFilters {
  private readonly filters = new Map<string, { short: number; scanned: number }>();

  /**
   * How a query of this filter (key: catalog and filters) asks: "scan" exactly at once; "walk" HNSW
   * (a probe, or a filter whose last walk gave enough); "sample": never seen short, so the index's
   * sample decides (IndexQuery.scanIfRare).
   */
  plan(key: string): "scan" | "walk" | "sample" {
    const entry = this.filters.get(key);
    if (!entry) return "sample";
    if (entry.short < SHORT_BEFORE_SCAN) return "walk";
    return ++entry.scanned % SCAN_PROBE_EVERY !== 0 ? "scan" : "walk";
  }

  /** What an approximate search of the filter gave (or would have: a scan at once of a rare one): fewer hits than asked, or enough. */
  note(key: string, short: boolean): void {
    const entry = this.filters.get(key);
    if (entry) {
      entry.short = short ? entry.short + 1 : 0;
      return;
    }
    if (!short) return;
    if (this.filters.size >= FILTERS_KEPT) this.filters.clear();
    this.filters.set(key, { short: 1, scanned: 0 });
  }
}
