// A filter's candidates (the query script's modes 2 and 3) as this process last scored them, by
// hash tag and the filter's posting groups, with the build's write count they were read at. While
// that count stays the same no product of the build has been written, so the query script sends
// none of them again: a storefront's brand or category page asked again costs Redis one GET, and
// this process a dot product per candidate, however many there are. After writes, the script
// sends just the products written since (from the build's write log), to be replaced in the set.
import type { HeldCandidates } from "./held-candidates.js";

export interface CandidateSet {
  /** "<build>:<write count>" (query-script.ts). */
  generation: string;
  /** Brought up to date in place: stored again (set) after each update, to count its new size. */
  candidates: HeldCandidates;
}

/**
 * Candidate sets, at most `capacity` candidates in all, kept by how often their filters are asked
 * (TinyLFU's admission, as Caffeine's cache): a set is worth holding only if it is asked again
 * before it is pushed out. One pushed out first costs its keeping (a holder read and kept per
 * candidate, then dropped: old-generation garbage) and never pays it back (at 100k, 100 filter
 * values of 1,000 candidates asked in turn through a cache of 50,000, every one held in turn: 27 ms
 * a query against 15 read whole).
 *
 * So a filter is admitted (its candidates named by stamp, to be held) once it has been asked
 * before, when its set fits in the room left or the sets asked longest ago that it would push out
 * were each asked less often than it. Filters asked in turn whose sets come to more than the
 * capacity then keep as many held as fit, and the same ones, instead of each pushing out the next
 * one asked (held by when they were stored: none held at all); a filter asked more often than
 * those held comes in. A filter answered by HNSW counts as the candidates holding it would hold.
 *
 * Counts are what was asked lately, as Caffeine's sketch keeps them: at most COUNT_LIMIT, and
 * halved every AGING_PER_SET asks per set the cache holds (at the mean size of the filters it
 * remembers). Counted over a longer past, the sets of pages asked before the traffic changed hold
 * out the ones asked now until these are asked as often: at 100k, ten pairs of filters asked after
 * fifty shop pairs were read whole on 289 of their 660 asks, replayed (p99 66 ms against 12 alone:
 * session 30 in docs/filtered-search-measurements.md); counted this way, on 10.
 *
 * Whether a set goes in is decided with the counts before the ask that brings it (admits, then
 * set, then noteAsked): with every count equal, as filters asked in turn have, nothing held is
 * pushed out; a count taken after the ask would be one ahead of the sets asked later in the turn.
 */
export class CandidateSets {
  /** With the size each was stored at; in the order they were last asked, longest ago first. */
  private readonly sets = new Map<string, { set: CandidateSet; size: number }>();
  private held = 0;
  /**
   * The filters asked lately: how often (halved as they age), the candidates they would hold, and
   * whether that size was counted (candidates read) or guessed (answered by HNSW: a sample's
   * estimate for several filters).
   */
  private readonly asked = new Map<string, { count: number; size: number; counted: boolean }>();
  private asksSinceAging = 0;
  /** Asks between halvings: set anew at each from the sizes remembered (see the class). */
  private agingAsks = MIN_AGING_ASKS;

  constructor(private readonly capacity: number) {}

  /**
   * Whether the filter's set would be held, asked now: it was asked before, and would go in. A
   * guessed size is weighed at the most it may be (GUESS_SPREAD over the guess): admitted on a guess
   * a little under the room left, a set found too large is read whole (150 ms at 1M) only to be
   * refused, and each filter asked in turn past the cache paid that once, when a guess first fell
   * under the room (p99 177 ms at 1M: session 29 in docs/filtered-search-measurements.md).
   */
  admits(tag: string, groups: readonly (readonly string[])[]): boolean {
    const key = keyOf(tag, groups);
    const asked = this.asked.get(key);
    if (this.capacity === 0 || asked === undefined) return false;
    const size = asked.counted ? asked.size : Math.ceil(asked.size * (1 + GUESS_SPREAD));
    if (size > this.capacity) return false;
    return this.victims(key, asked.count, this.held + size - this.capacity) !== undefined;
  }

  /**
   * The filter was asked: `candidates` of its scored (`counted`), or as many as holding it would
   * hold when it was answered another way (Infinity: more than may be held, or none to hold that
   * way), which for several filters is a sample's estimate. A size counted stands against guesses
   * within GUESS_SPREAD of it: weighed by a guess that fell a little under it, a set counted too
   * large for the room left was admitted, read whole (10,000 candidates at 1M) and refused, again
   * and again (p99 0.9 s: session 28 in docs/filtered-search-measurements.md).
   */
  noteAsked(tag: string, groups: readonly (readonly string[])[], candidates: number, counted: boolean): void {
    if (this.capacity === 0) return;
    const key = keyOf(tag, groups);
    const before = this.asked.get(key);
    const count = Math.min(COUNT_LIMIT, (before?.count ?? 0) + 1);
    const keep = !counted && before?.counted === true && Math.abs(candidates - before.size) <= before.size * GUESS_SPREAD;
    this.asked.delete(key);
    this.asked.set(key, keep ? { ...before, count } : { count, size: candidates, counted });
    if (this.asked.size > MAX_ASKED) this.asked.delete(this.asked.keys().next().value!);
    const entry = this.sets.get(key);
    if (entry) {
      this.sets.delete(key);
      this.sets.set(key, entry);
    }
    if (++this.asksSinceAging >= this.agingAsks) this.age();
  }

  /** Whether a set of `size` candidates for the filter would go in now (set): read only if so. */
  fits(tag: string, groups: readonly (readonly string[])[], size: number): boolean {
    if (this.capacity === 0 || size > this.capacity) return false;
    const key = keyOf(tag, groups);
    const room = this.held - (this.sets.get(key)?.size ?? 0) + size - this.capacity;
    return this.victims(key, this.asked.get(key)?.count ?? 0, room) !== undefined;
  }

  get(tag: string, groups: readonly (readonly string[])[]): CandidateSet | undefined {
    return this.sets.get(keyOf(tag, groups))?.set;
  }

  /** Stores the set just read or brought up to date, if it goes in (see the class). */
  set(tag: string, groups: readonly (readonly string[])[], set: CandidateSet): void {
    const key = keyOf(tag, groups);
    this.drop(key);
    // Capacity 0: no cache at all (SEARCH_HOLDER_CACHE=0), not even of filters matching nothing.
    const size = set.candidates.size;
    if (this.capacity === 0 || size > this.capacity) return;
    const room = this.held + size - this.capacity;
    if (room > 0) {
      const victims = this.victims(key, this.asked.get(key)?.count ?? 0, room);
      if (!victims) return;
      for (const victim of victims) this.drop(victim);
    }
    this.sets.set(key, { set, size });
    this.held += size;
  }

  delete(tag: string, groups: readonly (readonly string[])[]): void {
    this.drop(keyOf(tag, groups));
  }

  /**
   * Sets to push out for `room` candidates, among the EVICTION_WINDOW asked longest ago: those
   * asked less often than `count`, longest ago first; undefined when they hold too few.
   */
  private victims(key: string, count: number, room: number): string[] | undefined {
    if (room <= 0) return [];
    const victims: string[] = [];
    let freed = 0;
    let weighed = 0;
    for (const [held, { size }] of this.sets) {
      if (weighed++ === EVICTION_WINDOW) break;
      if (held === key || (this.asked.get(held)?.count ?? 0) >= count) continue;
      victims.push(held);
      freed += size;
      if (freed >= room) return victims;
    }
    return undefined;
  }

  /**
   * Every count halved; filters down to 0 forgotten (a set held for one keeps no claim to stay).
   * The next halving comes after AGING_PER_SET asks per set of the mean size remembered that the
   * capacity holds: filters asked in turn, as many as it holds, are each asked several times
   * between halvings, and keep their counts (and sets) through them.
   */
  private age(): void {
    this.asksSinceAging = 0;
    let sizes = 0;
    let sized = 0;
    for (const [key, asked] of this.asked) {
      if (asked.size > 0 && Number.isFinite(asked.size)) {
        sizes += Math.min(asked.size, this.capacity);
        sized++;
      }
      asked.count = Math.floor(asked.count / 2);
      if (asked.count === 0) this.asked.delete(key);
    }
    const sets = sized === 0 ? 1 : this.capacity / (sizes / sized);
    this.agingAsks = Math.round(Math.min(MAX_AGING_ASKS, Math.max(MIN_AGING_ASKS, AGING_PER_SET * sets)));
  }

  private drop(key: string): void {
    const entry = this.sets.get(key);
    if (!entry) return;
    this.sets.delete(key);
    this.held -= entry.size;
  }
}

/**
 * The candidates a filter answered by HNSW would hold, from the query script's reply: empty when
 * the script found more than a caller may hold (or none to hold that way), which must not read as
 * 0, an empty set that fits anywhere: at 1M a pair of 10,050 whose sample overshot was then
 * admitted, read whole (0.2-1 s) and refused, on about one unheld ask in 50 (session 33 in
 * docs/filtered-search-measurements.md).
 */
export function heldSizeOf(slot: string): number {
  return slot === "" ? Number.POSITIVE_INFINITY : Number(slot);
}

/** Filters remembered as asked: many more than the sets a cache holds, few enough to cost nothing. */
const MAX_ASKED = 4096;
/**
 * Asks between halvings per set the cache holds (Caffeine's: 10 per entry). Replayed over Zipf's
 * traffic (bench/candidate-admission.ts), 10 kept 2.5% of asks' sets only to push them out again
 * (a read and a set kept, then dropped: dearer than a read whole), 20 1.9% and 40 1.4%; but at 40
 * ten pairs asked after the shop pairs were held on 86% of their asks, at 20 on 97%. Halved every
 * 40,960 asks (before session 31): 0.6% kept, the pairs held on 55%, and after Zipf's popular
 * filters moved, 22% of asks held against 34% before (34% at 20).
 */
const AGING_PER_SET = 20;
/** Halvings apart at least this, for a cache that holds a few sets... */
const MIN_AGING_ASKS = 160;
/** ...and at most this, for one of thousands: the filters remembered, ten times over. */
const MAX_AGING_ASKS = 10 * MAX_ASKED;
/**
 * A count's ceiling (Caffeine's counters have 4 bits): a page asked thousands of times before the
 * traffic changed gives way after a few halvings, not after as many asks.
 */
const COUNT_LIMIT = 15;
/**
 * How far a guess may fall from a counted size and still be taken for the sampling's error, not a
 * change in the catalog; and so how much larger than its guess a set not yet counted may be. The
 * query script's sample (1,024 members of the smallest posting) misses by 1 / sqrt(members that
 * pass) of its estimate: 0.1 for two 10% filters at 1M (about 100 pass), so half is five times that.
 */
const GUESS_SPREAD = 0.5;
/** Held sets weighed as the ones to push out, asked longest ago first. */
const EVICTION_WINDOW = 16;

/** A filter's key in the sets, by hash tag and posting groups (also FilterLearning's). */
export function keyOf(tag: string, groups: readonly (readonly string[])[]): string {
  return JSON.stringify([tag, groups]);
}
