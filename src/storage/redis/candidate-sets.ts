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
 * Candidate sets, at most `capacity` candidates in all. A set is worth holding only if it is asked
 * again before it is pushed out: one dropped before its next ask costs its keeping (a holder read
 * and kept per candidate, then dropped: old-generation garbage) and never pays it back (at 100k,
 * 100 filter values of 1,000 candidates asked in turn through a cache of 50,000, every one held in
 * turn: 27 ms a query against 15 read whole).
 *
 * So each filter's next ask is expected as long after its last as the one before, measured in
 * candidates scored (counting, for a filter answered by HNSW, those holding it would have held:
 * had they all been held, those would have pushed the others out too). A set goes in when there is
 * room, or when sets expected back later than it hold enough to make room: of the sets stored
 * longest ago (EVICTION_WINDOW of them), those expected back last are dropped. Else it is not held,
 * and a filter is admitted (its candidates named by stamp, to be held) only when its set would go
 * in. Filters asked in turn whose sets come to more than the capacity so keep as many held as fit:
 * dropping the set stored longest ago held none at all (at 500k, ten sets of 5,012 through 50,000:
 * each set stored pushed out the next one asked), and admitting a filter asked again within the
 * capacity held none either once they came to more (at 1M, pairs of 10% filters asked in turn read
 * 10,000 candidates each for nothing).
 */
export class CandidateSets {
  /** With the size each was stored at. */
  private readonly sets = new Map<string, { set: CandidateSet; size: number }>();
  private held = 0;
  /** Candidates scored so far (every filter's, held or not). */
  private scored = 0;
  /** The filters asked lately: `scored` at their last ask, and how much was scored between it and the one before. */
  private readonly asked = new Map<string, { at: number; interval: number | undefined; size: number }>();

  constructor(private readonly capacity: number) {}

  /** Whether the filter's set would be held, asked now (it was asked before, at its last size). */
  admits(tag: string, groups: readonly (readonly string[])[]): boolean {
    const asked = this.asked.get(keyOf(tag, groups));
    if (this.capacity === 0 || asked === undefined || asked.size > this.capacity) return false;
    const room = this.held + asked.size - this.capacity;
    return room <= 0 || this.victims(this.scored + (this.scored - asked.at), room) !== undefined;
  }

  /** Candidates scored so far: taken when a query is sent, for its noteAsked. */
  scoredSoFar(): number {
    return this.scored;
  }

  /**
   * The filter was asked: `candidates` of its scored, or as many as holding it would hold when it
   * was answered another way (0: it could not be held). `askedAt`: scoredSoFar() when the query was
   * sent, so that answers returned while it was in flight count as scored since (with 8 queries
   * in flight, a filter's next ask can go out a few answers after its last came back).
   */
  noteAsked(tag: string, groups: readonly (readonly string[])[], candidates: number, askedAt = this.scored): void {
    if (this.capacity === 0) return;
    const key = keyOf(tag, groups);
    const previous = this.asked.get(key);
    this.asked.delete(key);
    this.asked.set(key, { at: askedAt, interval: previous && Math.max(0, askedAt - previous.at), size: candidates });
    this.scored += candidates;
    if (this.asked.size > MAX_ASKED) this.asked.delete(this.asked.keys().next().value!);
  }

  get(tag: string, groups: readonly (readonly string[])[]): CandidateSet | undefined {
    return this.sets.get(keyOf(tag, groups))?.set;
  }

  /** Stores the set just asked (noteAsked first: its expected next ask counts), if it is worth its room. */
  set(tag: string, groups: readonly (readonly string[])[], set: CandidateSet): void {
    const key = keyOf(tag, groups);
    this.drop(key);
    // Capacity 0: no cache at all (SEARCH_HOLDER_CACHE=0), not even of filters matching nothing.
    const size = set.candidates.size;
    if (this.capacity === 0 || size > this.capacity) return;
    const room = this.held + size - this.capacity;
    if (room > 0) {
      const victims = this.victims(this.expectedAsk(key), room);
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
   * Sets among the EVICTION_WINDOW stored longest ago, expected to be asked no sooner than `next`,
   * latest first, holding at least `room` candidates; undefined when they hold fewer.
   */
  private victims(next: number, room: number): string[] | undefined {
    const window: { key: string; next: number; size: number }[] = [];
    let weighed = 0;
    for (const [key, { size }] of this.sets) {
      if (weighed++ === EVICTION_WINDOW) break;
      const expected = this.expectedAsk(key);
      if (expected >= next) window.push({ key, next: expected, size });
    }
    // Stable: of sets expected alike, the one stored longest ago goes first.
    window.sort((a, b) => b.next - a.next);
    const victims: string[] = [];
    let freed = 0;
    for (const v of window) {
      if (freed >= room) break;
      victims.push(v.key);
      freed += v.size;
    }
    return freed >= room ? victims : undefined;
  }

  /**
   * When the filter is expected to be asked again, in candidates scored: an interval after its last
   * ask, or, once it is twice that overdue, as long again as it has gone unasked (a page no longer
   * asked drifts out). Not known (asked once, or long ago): as late as can be.
   */
  private expectedAsk(key: string): number {
    const asked = this.asked.get(key);
    if (asked?.interval === undefined) return Infinity;
    const since = this.scored - asked.at;
    return since > 2 * asked.interval ? this.scored + since : asked.at + asked.interval;
  }

  private drop(key: string): void {
    const entry = this.sets.get(key);
    if (!entry) return;
    this.sets.delete(key);
    this.held -= entry.size;
  }
}

/** Filters remembered as asked: many more than the sets a cache holds, few enough to cost nothing. */
const MAX_ASKED = 4096;
/** Sets weighed for dropping: those stored longest ago, so that storing one costs the same however many are held. */
const EVICTION_WINDOW = 64;

function keyOf(tag: string, groups: readonly (readonly string[])[]): string {
  return JSON.stringify([tag, groups]);
}
