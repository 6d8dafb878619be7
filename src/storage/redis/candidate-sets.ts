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
 * Candidate sets, at most `capacity` candidates in all; the set stored longest ago dropped first.
 * A set is worth holding only if it is asked again before the sets stored after it push it out:
 * one asked again only after more than `capacity` other candidates were scored would cost its
 * keeping (a holder read and kept per candidate, then dropped: old-generation garbage) and never
 * pay it back (at 100k, 100 filter values of 1,000 candidates asked in turn through a cache of
 * 50,000: 27 ms a query against 15 read whole). So a filter is admitted on being asked again soon
 * enough, measured in the candidates scored since its last ask, and those that the filters answered
 * by HNSW would have held (had they all been held, those would have pushed it out too: at 1M, pairs
 * of 10% filters asked in turn, each admitted on its second ask, read 10,000 candidates for nothing).
 */
export class CandidateSets {
  /** With the size each was stored at. */
  private readonly sets = new Map<string, { set: CandidateSet; size: number }>();
  private held = 0;
  /** Candidates scored so far (every filter's, held or not). */
  private scored = 0;
  /** The filters asked lately, with `scored` at their last ask. */
  private readonly asked = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  /** Whether the filter was asked lately enough that holding its set would have paid. */
  admits(tag: string, groups: readonly (readonly string[])[]): boolean {
    const at = this.asked.get(keyOf(tag, groups));
    return this.capacity > 0 && at !== undefined && this.scored - at <= this.capacity;
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
    this.asked.delete(key);
    this.asked.set(key, askedAt);
    this.scored += candidates;
    if (this.asked.size > MAX_ASKED) this.asked.delete(this.asked.keys().next().value!);
  }

  get(tag: string, groups: readonly (readonly string[])[]): CandidateSet | undefined {
    return this.sets.get(keyOf(tag, groups))?.set;
  }

  set(tag: string, groups: readonly (readonly string[])[], set: CandidateSet): void {
    const key = keyOf(tag, groups);
    this.drop(key);
    // Capacity 0: no cache at all (SEARCH_HOLDER_CACHE=0), not even of filters matching nothing.
    const size = set.candidates.size;
    if (this.capacity === 0 || size > this.capacity) return;
    while (this.held + size > this.capacity) this.drop(this.sets.keys().next().value!);
    this.sets.set(key, { set, size });
    this.held += size;
  }

  delete(tag: string, groups: readonly (readonly string[])[]): void {
    this.drop(keyOf(tag, groups));
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

function keyOf(tag: string, groups: readonly (readonly string[])[]): string {
  return JSON.stringify([tag, groups]);
}
