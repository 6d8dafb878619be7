// The best hits of a candidate set scored here (the query script's mode 2): a filter may leave
// thousands of candidates, of which a query wants a few dozen, so only those are kept in order
// rather than sorting them all.
import type { IndexHit } from "../../search/index.js";

/** Best first; equal cosines by product id, so that every part and every run agrees. */
export function byCosine(a: IndexHit, b: IndexHit): number {
  return b.cosine - a.cosine || (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0);
}

/** The `count` best hits offered, best first (byCosine). */
export class BestHits {
  private readonly kept: IndexHit[] = [];
  private offered = 0;

  constructor(private readonly count: number) {}

  /** Whether every hit offered is kept (no more than `count` were). */
  get all(): boolean {
    return this.offered <= this.count;
  }

  offer(hit: IndexHit): void {
    this.offered++;
    const kept = this.kept;
    if (kept.length === this.count && (this.count === 0 || byCosine(hit, kept[kept.length - 1]!) >= 0)) return;
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

/** "<id> <stamp>" lines (the query script's candidates and a word's holders). */
export function stampLines(lines: string): { productId: string; stamp: string }[] {
  if (lines === "") return [];
  return lines.split("\n").filter((line) => line !== "").map((line) => {
    const space = line.indexOf(" ");
    return { productId: line.slice(0, space), stamp: line.slice(space + 1) };
  });
}
