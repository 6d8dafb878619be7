// When a process learns a filter's matches without field postings (SlotIndex.learn). Without
// them, Redis cannot name a filter's matches cheaply: each query of a 1% filter walks HNSW with the
// filter pushed down (at 100k about 30 ms of a Redis thread), a 0.1% one scans the set (70 ms).
// Learning asks for them all once, in an exact scan with the filter, and reads them into this
// process as held candidates (candidate-sets.ts), which answer the filter's next asks exactly for
// a dot product each, while the build's write count stays where it was. Any write to the catalog
// moves it, and the next ask learns again; so a filter is learned on its second ask, and a filter
// whose learned set keeps being written away before it serves as many asks as learning it took
// waits twice as many asks before the next try.

/** Asks of a filter before it is learned (the second: asked before, like held sets' admission). */
export const LEARN_AFTER = 2;
/** The most asks a filter whose learned sets went unused waits before it is learned again. */
const MOST_WAIT = 1024;
/** Asks before a filter with more matches than may be held is tried again. */
const TOO_MANY_WAIT = 256;
/** Filters remembered per process; past it, the memory starts again. */
const FILTERS_KEPT = 10_000;

interface Entry {
  /** Asks since it was last learned (or first asked). */
  asks: number;
  /** Asks before it is learned again. */
  wait: number;
  /** Asks its current learned set served, while held. */
  served: number;
}

export class FilterLearning {
  private readonly filters = new Map<string, Entry>();

  /** Counts an ask of a filter not held; whether this one learns it. */
  shouldLearn(key: string): boolean {
    let entry = this.filters.get(key);
    if (!entry) {
      if (this.filters.size >= FILTERS_KEPT) this.filters.clear();
      this.filters.set(key, (entry = { asks: 0, wait: LEARN_AFTER, served: 0 }));
    }
    return ++entry.asks >= entry.wait;
  }

  /** Its set is held from now on. */
  learned(key: string): void {
    const entry = this.filters.get(key);
    if (entry) Object.assign(entry, { asks: 0, served: 0 });
  }

  /** An ask answered from its held set. */
  served(key: string): void {
    const entry = this.filters.get(key);
    if (entry) entry.served++;
  }

  /**
   * Its held set was written away (or learning it found no room for its matches, or a match gone,
   * or without words to read):
   * learned again after LEARN_AFTER asks when the set served at least as many asks as were waited
   * for it, else after twice as many as that wait.
   */
  lost(key: string): void {
    const entry = this.filters.get(key);
    if (!entry) return;
    entry.wait = entry.served >= entry.wait ? LEARN_AFTER : Math.min(MOST_WAIT, 2 * entry.wait);
    entry.asks = 0;
  }

  /** Learning it found more matches than may be held: tried again after TOO_MANY_WAIT asks. */
  tooMany(key: string): void {
    const entry = this.filters.get(key);
    if (entry) Object.assign(entry, { asks: 0, wait: TOO_MANY_WAIT });
  }
}
