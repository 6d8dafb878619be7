// What queries read of their nearest elements (hits' attributes; with a common word, every nearest
// element's doc), copied by this process as of a generation of their tag's build ("<build>:<count>",
// the build's write count: lexical-script.ts). A query whose nearest elements a VSIM of their own
// found (threaded-nearest.ts) asks, in the VSIM's own pipeline, only whether the build is still the
// one searched and which products were written since the generation held here (NEAREST_SCRIPT,
// from the build's write log); those are dropped, and a query whose nearest elements are all held
// is answered in one round trip instead of two. Copies read since are kept only when read as of
// the generation held then: any write after it is in the next look at the log.
import type { JsonObject } from "../../catalogs/index.js";
import { parseGeneration } from "./generation.js";

/** A product's copies: its attributes, its doc ("#<stamp> <words>"), or both. */
export interface ProductCopy {
  /** Shared by every query that answers the product: never modified. */
  attributes?: JsonObject | undefined;
  doc?: string | undefined;
}

/** Tags whose generation this process remembers; past it, it starts again. */
const TAGS_KEPT = 4096;

interface Held {
  build: string;
  count: number;
  /** Names this tag's entries until its copies are dropped whole (another build, a log too short). */
  epoch: number;
}

/** One of the copies' two tiers: products' copies by their tag's epoch, and how many in all. */
class CopyTier {
  // By epoch, then product: no key built a lookup (a query looks up 10-50 products).
  private readonly epochs = new Map<number, Map<string, ProductCopy>>();
  size = 0;

  get(epoch: number, productId: string): ProductCopy | undefined {
    return this.epochs.get(epoch)?.get(productId);
  }

  set(epoch: number, productId: string, copy: ProductCopy): void {
    let products = this.epochs.get(epoch);
    if (!products) this.epochs.set(epoch, (products = new Map()));
    const before = products.size;
    products.set(productId, copy);
    this.size += products.size - before;
  }

  delete(epoch: number, productId: string): void {
    if (this.epochs.get(epoch)?.delete(productId)) this.size--;
  }
}

/**
 * At most `capacity` products' copies, in two tiers of half each: an entry read again moves to the
 * younger one, and the older one is dropped whole when the younger fills, so what queries
 * keep asking for stays and each operation costs a map lookup.
 */
export class NearestCopies {
  private readonly held = new Map<string, Held>();
  private young = new CopyTier();
  private old = new CopyTier();
  private epochs = 0;

  constructor(private readonly capacity: number) {}

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** The generation the tag's copies are held as of, if any. */
  generation(tag: string): string | undefined {
    const held = this.held.get(tag);
    return held && `${held.build}:${held.count}`;
  }

  /** The build the tag's copies are held from, if any. */
  build(tag: string): string | undefined {
    return this.held.get(tag)?.build;
  }

  /**
   * What an answer as of `generation` said was written since `since`, the generation the caller
   * sent with it: the products (dropped here), or undefined when unknown (every copy of the tag
   * dropped). An answer older than the generation held (other queries' answers came first) changes
   * nothing: what is held is newer. True when what is held is now as of `generation` or later.
   */
  advance(tag: string, since: string | undefined, generation: string, written: readonly string[] | undefined): boolean {
    if (!this.enabled) return false;
    const now = parseGeneration(generation);
    if (!now) return false;
    const held = this.held.get(tag);
    if (held && held.build === now.build && now.count <= held.count) return true;
    const from = since === undefined ? undefined : parseGeneration(since);
    // The products listed are those written after `since`: they cover every write after the
    // generation held only if that is `since` or later, in the same build.
    const covers = held !== undefined && from !== undefined && from.build === held.build && from.count <= held.count;
    if (!held || held.build !== now.build || written === undefined || !covers) {
      if (this.held.size >= TAGS_KEPT && !held) this.held.clear();
      this.held.set(tag, { ...now, epoch: ++this.epochs });
      return true;
    }
    for (const id of written) {
      this.young.delete(held.epoch, id);
      this.old.delete(held.epoch, id);
    }
    held.count = now.count;
    return true;
  }

  get(tag: string, productId: string): ProductCopy | undefined {
    const held = this.held.get(tag);
    if (!held) return undefined;
    const young = this.young.get(held.epoch, productId);
    if (young) return young;
    const old = this.old.get(held.epoch, productId);
    if (old) this.keep(held.epoch, productId, old);
    return old;
  }

  /** Keeps copies read as of `generation`, beside those held of the product, if that is the generation held. */
  set(tag: string, generation: string, productId: string, copy: ProductCopy): void {
    const held = this.held.get(tag);
    if (!held || `${held.build}:${held.count}` !== generation || (copy.attributes === undefined && copy.doc === undefined)) return;
    const had = this.young.get(held.epoch, productId) ?? this.old.get(held.epoch, productId);
    this.keep(held.epoch, productId, had ? { attributes: copy.attributes ?? had.attributes, doc: copy.doc ?? had.doc } : copy);
  }

  private keep(epoch: number, productId: string, copy: ProductCopy): void {
    this.young.set(epoch, productId, copy);
    if (this.young.size >= Math.max(1, this.capacity / 2)) {
      this.old = this.young;
      this.young = new CopyTier();
    }
  }
}
