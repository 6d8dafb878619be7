// What a lexical query needs of every product holding one of its words: the product's element (its
// dot products with the query), attributes (filters and results) and words (the lexical match).
// Read from Redis for every query, a brand's 500 holders cost about 11 ms of CPU, half in Redis
// (VEMB, VGETATTR, HGET per holder) and half here (parsing 400 KB). Every index write gives the
// product a new stamp, kept with its words (lexical-script.ts), so a query reads only the holders'
// stamps and fetches just those this process has not seen under that stamp: what is scored is what
// the index holds now, whichever process wrote it.
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
  private readonly entries = new Map<string, CachedHolder>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  /** The holder as last read, if it was read under this stamp. */
  get(catalogId: string, productId: string, stamp: string): CachedHolder | undefined {
    if (stamp === "") return undefined;
    const entry = this.entries.get(key(catalogId, productId));
    return entry?.stamp === stamp ? entry : undefined;
  }

  set(catalogId: string, productId: string, holder: CachedHolder): void {
    // Unstamped holders (an older build) cannot be told apart from their next version.
    if (this.capacity === 0 || holder.stamp === "") return;
    const k = key(catalogId, productId);
    this.entries.delete(k);
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(k, holder);
  }
}

function key(catalogId: string, productId: string): string {
  // Product ids hold no spaces (letters, digits, . _ ~ -).
  return `${catalogId} ${productId}`;
}
