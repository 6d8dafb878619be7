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
  private readonly catalogs = new Map<string, Map<string, CachedHolder>>();
  /** Every entry's catalog, oldest first (a catalog once per entry it holds). */
  private readonly order: string[] = [];
  private oldest = 0;
  private count = 0;

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.count;
  }

  /** The holder as last read, if it was read under this stamp. */
  get(catalogId: string, productId: string, stamp: string): CachedHolder | undefined {
    if (stamp === "") return undefined;
    const entry = this.catalogs.get(catalogId)?.get(productId);
    return entry?.stamp === stamp ? entry : undefined;
  }

  set(catalogId: string, productId: string, holder: CachedHolder): void {
    // Unstamped holders (an older build) cannot be told apart from their next version.
    if (this.capacity === 0 || holder.stamp === "") return;
    if (this.catalogs.get(catalogId)?.delete(productId)) this.count--;
    else this.order.push(catalogId);
    while (this.count >= this.capacity) this.dropOldest();
    // Looked up after the drops: dropping a catalog's last entry drops its map.
    let products = this.catalogs.get(catalogId);
    if (!products) this.catalogs.set(catalogId, (products = new Map()));
    products.set(productId, holder);
    this.count++;
  }

  private dropOldest(): void {
    // A catalog's map keeps insertion order, so its first entry is its oldest.
    const catalogId = this.order[this.oldest++]!;
    const products = this.catalogs.get(catalogId)!;
    products.delete(products.keys().next().value!);
    this.count--;
    if (products.size === 0) this.catalogs.delete(catalogId);
    if (this.oldest > 4096 && this.oldest * 2 > this.order.length) {
      this.order.splice(0, this.oldest);
      this.oldest = 0;
    }
  }
}
