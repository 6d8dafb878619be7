// The best hits of a candidate set scored here (the query script's mode 2): a filter may leave
// thousands of candidates, of which a query wants a few dozen, so only those are kept in order
// rather than sorting them all.
import type { IndexHit } from "../../search/index.js";

/** Best first; equal cosines by product id, so that every part and every run agrees. */
export function byCosine(a: IndexHit, b: IndexHit): number {
  return b.cosine - a.cosine || (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0);
}

/** The `count` best hits offered, best first (byCosine); a hit is made only when it is kept. */
export class BestHits {
  private readonly kept: IndexHit[] = [];
  private offered = 0;

  constructor(private readonly count: number) {}

  /** Whether every hit offered is kept (no more than `count` were). */
  get all(): boolean {
    return this.offered <= this.count;
  }

  /** Counts an offer, and says whether a hit of this id and cosine is to be kept (then `keep` it). */
  wants(productId: string, cosine: number): boolean {
    this.offered++;
    if (this.kept.length < this.count) return true;
    const last = this.kept[this.kept.length - 1];
    return last !== undefined && (cosine > last.cosine || (cosine === last.cosine && productId < last.productId));
  }

  keep(hit: IndexHit): void {
    const kept = this.kept;
    // Binary search for the first kept hit that hit goes before.
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (byCosine(kept[mid]!, hit) <= 0) low = mid + 1;
      else high = mid;
    }
    kept.splice(low, 0, hit);
    if (kept.length > this.count) kept.pop();
  }

  hits(): IndexHit[] {
    return this.kept;
  }
}
