// What a lexical query needs of every product holding one of its words: the product's element (its
// dot products with the query), attributes (filters and results) and words (the lexical match).
// Read from Redis for every query, a brand's 500 holders cost about 11 ms of CPU, half in Redis
// (VEMB, VGETATTR, HGET per holder) and half here (parsing 400 KB). Every index write gives the
// product a new stamp, kept with its words (lexical-script.ts), so a query reads only the holders'
// stamps and fetches just those this process has not seen under that stamp: what is scored is what
// the index holds now, whichever process wrote it. A selective filter's candidates (the query
// script's mode 2) are named by their stamps too, and kept here alike.
import type { JsonObject } from "../../catalogs/index.js";

export interface CachedHolder {
  /** The stamp of the index write this was read after ("" for builds written before stamps). */
  stamp: string;
  /** The element as stored (unit length), float32. */
  element: Float32Array;
  /** Shared by every query that scores the holder: never modified. */
  attributes: JsonObject;
  words: readonly string[];
}

/** Holders by catalog and product, the oldest entry dropped first once `capacity` are kept. */
export class HolderCache {
  // One map per catalog: a query looks up hundreds of holders of one catalog.
  private readonly catalogs = new Map<string, Map<string, { holder: CachedHolder; seq: number }>>();
  // Every entry set, oldest first, as its catalog, product and sequence number: one set again since
  // is newer there, which the number tells. Not the maps' own order: taking a Map's first key after
  // dropping many walks past every key dropped since V8 last compacted it (27 us a set when a
  // filter's candidates churned through a full cache, against 2.7 filling it).
  private readonly queue: { catalogId: string; productId: string; seq: number }[] = [];
  private head = 0;
  private seq = 0;
  private count = 0;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.count;
  }

  /** The holder as last read, if it was read under this stamp. */
  get(catalogId: string, productId: string, stamp: string): CachedHolder | undefined {
    if (stamp === "") return undefined;
    const entry = this.catalogs.get(catalogId)?.get(productId)?.holder;
    return entry?.stamp === stamp ? entry : undefined;
  }

  set(catalogId: string, productId: string, holder: CachedHolder): void {
    // Unstamped holders (an older build) cannot be told apart from their next version.
    if (this.capacity === 0 || holder.stamp === "") return;
    if (this.catalogs.get(catalogId)?.delete(productId)) this.count--;
    while (this.count >= this.capacity) this.dropOldest();
    // Looked up after the drops: dropping a catalog's last entry drops its map.
    let products = this.catalogs.get(catalogId);
    if (!products) this.catalogs.set(catalogId, (products = new Map()));
    const seq = ++this.seq;
    products.set(productId, { holder, seq });
    this.queue.push({ catalogId, productId, seq });
    this.count++;
    // Holders set again and again in a cache that never fills leave their old places behind.
    if (this.queue.length - this.head > 2 * this.capacity + 4096) this.compact();
  }

  /** The queue's places still holding an entry, in order. */
  private compact(): void {
    const live = this.queue.slice(this.head).filter(({ catalogId, productId, seq }) => this.catalogs.get(catalogId)?.get(productId)?.seq === seq);
    this.queue.length = 0;
    this.queue.push(...live);
    this.head = 0;
  }

  private dropOldest(): void {
    for (;;) {
      const { catalogId, productId, seq } = this.queue[this.head++]!;
      const products = this.catalogs.get(catalogId);
      // Set again since (a newer place in the queue) or replaced: not this place's to drop.
      if (products?.get(productId)?.seq !== seq) continue;
      products.delete(productId);
      this.count--;
      if (products.size === 0) this.catalogs.delete(catalogId);
      break;
    }
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** "<id> <stamp>" lines, as the query script names a word's holders and a filter's candidates. */
export function stampLines(lines: string): { productId: string; stamp: string }[] {
  if (lines === "") return [];
  return lines.split("\n").filter((line) => line !== "").map((line) => {
    const space = line.indexOf(" ");
    return { productId: line.slice(0, space), stamp: line.slice(space + 1) };
  });
}
