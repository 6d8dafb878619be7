// When a process learns a filter's matches without field postings (SlotIndex.learn). Without
// them, Redis cannot name a filter's matches cheaply: each query of a 1% filter walks HNSW with the
// filter pushed down (at 100k about 15-30 ms of a Redis thread), a 0.1% one scans the set (70 ms).
// Learning asks for them all once, in an exact scan with the filter, and reads them into this
// process as held candidates (candidate-sets.ts), which answer the filter's next asks exactly for
// a dot product each. A write to the catalog moves the build's write count: the next ask is sent
// the products written since, whole, from the build's write log, and the set is brought up to date
// (query-script.ts mode 4, lexical-script.ts LEARNED_CATCH_UP); a set fallen further behind is
// lost, and learned again.
//
// Learning costs about as much as a few asks: the scan evaluates the filter on every element
// (about 0.7 us each), and each match read costs a VEMB and a VGETATTR. So a filter is learned once
// it has been asked about as many times as its scan costs in asks, as a page asked that often is
// likely to be asked as often again: at 100k on the fifth ask, in a part of 500,000 on the 21st.
// Learned on the second ask, filters asked in turn a few times each paid for scans that served
// nothing (at 100k, 50 pairs of 2% filters asked about 7 times each: p99 128 ms against 28). A
// filter whose learned set is written away before it served as many asks as were waited for it
// waits twice as many before the next try, and one lost to writes is learned again only once the
// catalog took few enough writes within a wait to be caught up with, so a catalog under writes
// faster than the filter is asked stops paying for scans whose sets the writes take.
import { parseGeneration } from "./generation.js";

/** Elements a filtered search costs as much Redis as scanning, with the filter (at 100k, HNSW with a 1% filter: 15-25 ms; the scan: 70 ms). */
const SCAN_ELEMENTS_PER_ASK = 25_000;
/** The most asks a filter whose learned sets went unused waits before it is learned again. */
const MOST_WAIT = 1024;
/** Asks before a filter with more matches than may be held is tried again. */
const TOO_MANY_WAIT = 256;
/** Filters remembered per process; past it, the memory starts again. */
const FILTERS_KEPT = 10_000;

/**
 * How one learning ended: its matches held; held at a selective filter's first ask, as the
 * catalogs' store named them (SlotIndex.fromNamed), or not held then (no room: that ask answered
 * from them alone); more of them than a set may hold; no room for them in
 * the held sets; lost (a match gone or without words, or the catalog rebuilt, meanwhile); not
 * tried (written since its last set was lost, faster than a set catches up with); or failed (Redis
 * refused or went away: the query's own calls report that).
 */
export type LearningOutcome = "learned" | "named" | "named_not_held" | "too_many" | "no_room" | "lost" | "written" | "failed";

/** Asks of a filter of a set of `elements` before it is learned: at least the second. */
export function asksBeforeLearning(elements: number): number {
  return Math.max(2, 1 + Math.ceil(elements / SCAN_ELEMENTS_PER_ASK));
}

interface Entry {
  /** Asks since it was last learned (or first asked). */
  asks: number;
  /** Asks before it is learned again. */
  wait: number;
  /** The wait while its sets serve at least as many asks (asksBeforeLearning). */
  base: number;
  /** Asks its current learned set served, while held. */
  served: number;
  /** The catalog's generation when its last set was lost to a write, until one is learned again. */
  lostAt?: string | undefined;
  /** Asks before the catalogs' store is asked to name its products again (it named too many). */
  unnamedFor?: number;
}

export class FilterLearning {
  private readonly filters = new Map<string, Entry>();

  /** Counts an ask of a filter not held, of a set of `elements`; whether this one learns it. */
  shouldLearn(key: string, elements: number): boolean {
    const base = asksBeforeLearning(elements);
    let entry = this.filters.get(key);
    if (!entry) {
      if (this.filters.size >= FILTERS_KEPT) this.filters.clear();
      this.filters.set(key, (entry = { asks: 0, wait: base, base, served: 0 }));
    }
    // The set grew or shrank: a wait not yet doubled follows it.
    if (entry.wait === entry.base) entry.wait = base;
    entry.base = base;
    return ++entry.asks >= entry.wait;
  }

  /**
   * Whether the catalogs' store may be asked to name its products (SlotIndex.fromNamed): not within
   * TOO_MANY_WAIT asks of its naming more than a set holds.
   */
  mayName(key: string): boolean {
    const entry = this.filters.get(key);
    if (!entry?.unnamedFor) return true;
    entry.unnamedFor--;
    return false;
  }

  /** The catalogs' store named more of its products than a set holds. */
  namedTooMany(key: string): void {
    let entry = this.filters.get(key);
    if (!entry) {
      if (this.filters.size >= FILTERS_KEPT) this.filters.clear();
      this.filters.set(key, (entry = { asks: 0, wait: 2, base: 2, served: 0 }));
    }
    entry.unnamedFor = TOO_MANY_WAIT;
  }

  /** Its set is held from now on. */
  learned(key: string): void {
    const entry = this.filters.get(key);
    if (entry) Object.assign(entry, { asks: 0, served: 0, lostAt: undefined });
  }

  /** An ask answered from its held set. */
  served(key: string): void {
    const entry = this.filters.get(key);
    if (entry) entry.served++;
  }

  /**
   * Its held set was written away (or learning it found no room for its matches, or a match gone,
   * or without words to read): learned again after the base wait when the set served at least as
   * many asks as were waited for it, else after twice the last wait.
   */
  lost(key: string, generation?: string): void {
    const entry = this.filters.get(key);
    if (!entry) return;
    entry.wait = entry.served >= entry.wait ? entry.base : Math.min(MOST_WAIT, 2 * entry.wait);
    entry.asks = 0;
    if (generation !== undefined) entry.lostAt = generation;
  }

  /**
   * Whether the catalog (now at `generation`) took more writes since the filter's last set was
   * lost to writes (or since this was last asked) than a learned set can be brought up to date
   * from (`catchUp`, query-script.ts mode 4): then it is not learned now but once it took fewer
   * within a base wait (writes faster than the filter is asked would take the set as soon as it
   * was read), at the cost of one read of the generation each time, not a scan.
   */
  stillWritten(key: string, generation: string, catchUp: number): boolean {
    const entry = this.filters.get(key);
    if (!entry || entry.lostAt === undefined || entry.lostAt === generation) return false;
    const [lost, now] = [parseGeneration(entry.lostAt), parseGeneration(generation)];
    if (lost && now && lost.build === now.build && now.count >= lost.count && now.count - lost.count <= catchUp) return false;
    Object.assign(entry, { lostAt: generation, asks: 0, wait: entry.base });
    return true;
  }

  /** Learning it found more matches than may be held: tried again after TOO_MANY_WAIT asks. */
  tooMany(key: string): void {
    const entry = this.filters.get(key);
    if (entry) Object.assign(entry, { asks: 0, wait: TOO_MANY_WAIT });
  }
}
