// Which filters not held are answered from the products the catalogs' store names
// (SlotIndex.fromNamed) rather than walked or scanned: at their first ask, those few enough that
// reading them costs less than the walk, or than the scan a walk that comes up short is followed
// by; and when a scan is asked, those few enough that reading them costs less than the scan.
import { FILTER_SHARE_SAMPLE } from "./filter-shares.js";

/**
 * Passed by at most NAMED_SHARE of the set and NAMED_UP_TO elements: reading a named product costs
 * about 10 us (a VEMB and a VGETATTR, about 5 us of Redis's main thread, and as much of the
 * process), so 500 cost less than a filtered walk (15-25 ms at 100k). 1,000-2,000 cost as much as
 * the walk: at 100k, named 1% and 2% filters asked in turn answered no sooner (p50 24.7 and 35.5
 * ms against 23.7 and 32.6) and their p99 at 1 client rose (64 and 150 ms against 49 and 73).
 */
export const NAMED_UP_TO = 500;
export const NAMED_SHARE = 0.02;
/**
 * Or passed by at most this many of the set's sample of FILTER_SHARE_SAMPLE, whatever its size: a
 * walk of a filter so rare comes up short and the set is scanned (about 0.16 us an element: 80 ms
 * in a part of 500,000), where reading its products (about 1,500 there) costs less. At 1M in two
 * parts, the 1,000 `line` values (about 500 products a part) asked in turn were walked, and then
 * scanned, in a part whose sample found 3 of them (1,500 estimated, past NAMED_UP_TO) on about one
 * search in six: p50 / p99 20.5 / 202.8 ms at 1 client (session 62).
 */
export const NAMED_SAMPLE_PASSING = 3;

/** Whether a filter that `share` of a set of `size` elements pass (as its sample tells) is named at its first ask. */
export function fewToName(share: number, size: number): boolean {
  return Math.round(share * FILTER_SHARE_SAMPLE) <= NAMED_SAMPLE_PASSING || (share <= NAMED_SHARE && share * size <= NAMED_UP_TO);
}

/**
 * An exact scan reads every element of the set on Redis's threads, about 0.16 us each (80 ms in a
 * part of 500,000), where reading a named product costs the service 10-50 us (at 100k and 1M): a
 * filter asked to be scanned (a walk came up short, or lately did) is named instead when the store
 * names at most one product in this many of the set; and so is one at its first ask whose sample
 * count is at most FILTER_SHARE_SAMPLE / SCAN_ELEMENTS_PER_NAMED (5 of 1,000), which a walk, sized by
 * that count, would often leave short. At 300k in two parts, a `line` value (about 150 products a
 * part) that 4 or more of a part's sample passed (1 part in 50) was walked, came up short and that
 * part was scanned: p99 135 ms at 1 client on a p50 of 17 (session 63, a slow machine).
 */
export const SCAN_ELEMENTS_PER_NAMED = 200;

/**
 * Up to how many products a filter is named instead of walked or scanned, in a set of `size`
 * elements whose sample finds `share` of them pass it (undefined: not read yet): 0 when the sample
 * finds more pass than that (or, once a scan is asked, more than twice as many: MySQL would read
 * that many rows only to answer "too many"), or the set is so small that its scan costs less.
 */
export function namedInsteadOfScan(size: number, share: number | undefined, scanAsked: boolean): number {
  const most = Math.floor(size / SCAN_ELEMENTS_PER_NAMED);
  if (share === undefined) return scanAsked ? most : 0;
  return share * size <= (scanAsked ? 2 : 1) * most ? most : 0;
}
