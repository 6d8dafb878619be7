// Filters whose approximate search keeps coming up short. The index's HNSW search with a filter
// pushed down (no field postings) stops after a bounded walk; a filter passed by few products
// (0.1% of a catalog) leaves it short of the hits asked, and the searcher then scans exactly. The
// walk is wasted: at 100k, about 35 ms of Redis before a 70 ms scan (README "Filtered search:
// selective filters without postings"). A storefront asks the same filters again (a category
// page, a facet value), so a filter that came up short the last few times it was asked of a
// catalog is scanned at once, and now and then asked of HNSW again in case it no longer comes up
// short (the catalog grew, or its products changed).

/** Approximate searches in a row that came up short before a filter is scanned at once. */
export const SHORT_BEFORE_SCAN = 2;
/** Of the queries of a filter scanned at once, every this-many-th asks HNSW again. */
export const SCAN_PROBE_EVERY = 64;
/** Filters remembered per process; past it, the memory starts again. */
const FILTERS_KEPT = 10_000;

export class ShortFilters {
  private readonly filters = new Map<string, { short: number; scanned: number }>();

  /** Whether a query of this filter (key: catalog and filters) should scan exactly at once. */
  scanAtOnce(key: string): boolean {
    const entry = this.filters.get(key);
    if (!entry || entry.short < SHORT_BEFORE_SCAN) return false;
    return ++entry.scanned % SCAN_PROBE_EVERY !== 0;
  }

  /** What an approximate search of the filter gave: fewer hits than asked, or enough. */
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
