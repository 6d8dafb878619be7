// HNSW's links a node (VADD's M) for a set, chosen by the size it is built for. More links find
// more of the true nearest at the same search depth, for memory and time: at 100k elements M 16
// already gives the service recall@10 0.95 at SEARCH_EF 250, past it recall falls (0.85-0.86 at
// 300k, 0.74 at 1M in two sets of 500,000), where M 32 gives 0.92 and 0.90 for about 300 B of Redis
// a product, a VSIM 16-64% slower and index writes 21-29% slower (README "HNSW's graph"). Even
// with 32 links, SEARCH_EF 250 finds 0.92 of the true top 10 at 1M in two sets of 500,000 (raw VSIM),
// so an unfiltered search of a set past the same size walks deeper (SEARCH_EF_LARGE).

/** SEARCH_HNSW_M: one M for every build, or "auto" (by the set's size). */
export type HnswMSetting = number | "auto";

/** "auto"'s M for a set built for at most the setting's `largeFrom` elements. */
export const SMALL_SET_M = 16;
/** "auto"'s M for a larger set. */
export const LARGE_SET_M = 32;

/** The M a build of a set expected to hold `setSize` elements is begun with. */
export function hnswMFor(setting: HnswMSetting, largeFrom: number, setSize: number): number {
  if (setting !== "auto") return setting;
  return setSize > largeFrom ? LARGE_SET_M : SMALL_SET_M;
}

/** SEARCH_EF and SEARCH_EF_LARGE, and the set size past which the second applies (SEARCH_HNSW_M_LARGE_FROM). */
export interface SearchEfSettings {
  ef: number;
  efLarge: number;
  largeFrom: number;
}

/**
 * HNSW's depth for an unfiltered search of a set of `setSize` elements (undefined: not yet known,
 * searched as a large one): never shallower than SEARCH_EF. Filtered walks keep SEARCH_EF, as
 * their depth is sized by the filter's share (filter-shares.ts).
 */
export function unfilteredEfFor(settings: SearchEfSettings, setSize: number | undefined): number {
  const large = setSize === undefined || setSize > settings.largeFrom;
  return large ? Math.max(settings.ef, settings.efLarge) : settings.ef;
}
