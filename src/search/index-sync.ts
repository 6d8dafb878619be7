// Keeps each catalog's vector index in line with MySQL, the source of truth. Every change that
// affects the index queues the product in MySQL in the change's own transaction; a sync applies the
// queue under a per-catalog lock, reading each product's current state, so it is idempotent and
// order-free. A rebuild (the model or map changed, the index lost its data, or an operator asked)
// replaces the whole set from MySQL alone: nothing is re-embedded.
import type { SentenceEncoder } from "../embeddings/index.js";
import type { Logger } from "../logging/index.js";
import type { FacetStore, IndexableProduct, IndexEntry, IndexSource, VectorIndex } from "./ports.js";
import { lexicalWords } from "./lexical.js";
import { elementVector, VECTOR_LAYOUT_VERSION } from "./vector-layout.js";
import { hnswMFor } from "./hnsw-links.js";
import type { HnswMSetting } from "./hnsw-links.js";
import { visualSpaceVersion } from "./visual-space.js";
import type { StoredMap, VisualSpace, VisualSpaces } from "./visual-space.js";

const PAGE = 500;
/**
 * Entries built between two turns of the event loop. Projecting a photo through a kernel map costs
 * about 1 ms, so a page built at once would hold up the process's requests for half a second.
 */
const ENTRIES_PER_TURN = 25;
/** How long a sync waits by default for another process's sync of the same catalog. */
const DEFAULT_WAIT_MS = 2000;
/** Most sets one catalog's index is split into (README: "One catalog over several shards"). */
export const MAX_INDEX_PARTS = 64;

export interface IndexSyncOptions {
  /** A rebuild splits the catalog's index into sets of at most about this many products. */
  partSize: number;
  /** HNSW links a node of a rebuild's sets: one M, or "auto" by the size each set is built for (hnsw-links.ts). */
  hnswM: HnswMSetting;
  /** With hnswM "auto", sets built for more products than this get LARGE_SET_M. */
  hnswLargeFrom: number;
}

export interface SyncResult {
  /** The catalog is gone: its index was dropped. */
  dropped: boolean;
  /** Entries written by a rebuild, or undefined when none was needed. */
  rebuilt: number | undefined;
  /** The sets the rebuild split the index into (1: one set); undefined when none was needed. */
  parts: number | undefined;
  /** Queued changes applied. */
  applied: number;
}

export class IndexSync {
  private readonly catchingUp = new Map<string, Promise<SyncResult | undefined>>();

  constructor(
    private readonly source: IndexSource,
    private readonly index: VectorIndex,
    private readonly spaces: VisualSpaces,
    private readonly text: SentenceEncoder,
    private readonly log: Logger,
    private readonly options: IndexSyncOptions,
    /** The facets of what the index holds (ports.ts), written beside it; none: not kept. */
    private readonly facets?: FacetStore,
  ) {}

  /** The index version a catalog with this map must have; anything else is rebuilt. */
  versionFor(map: StoredMap | undefined): string {
    return `${this.servableVersionPrefix()}${visualSpaceVersion(map?.identity, this.text)}`;
  }

  /**
   * The start of every version whose builds can answer today's queries. Query vectors are word
   * vectors whatever the catalog's map, so a build made with the previous map (or before the first)
   * still answers correctly while its replacement is built aside: search never waits for a refit.
   */
  servableVersionPrefix(): string {
    return `${VECTOR_LAYOUT_VERSION}|${this.text.version}|`;
  }

  /**
   * Brings one catalog's index up to date: drops it if the catalog is gone, rebuilds it if its
   * version is not the expected one (or `rebuild` is set), then applies queued changes. Undefined
   * when another process held the catalog's index for all of `waitMs`: that process applies what
   * is queued before it lets go, and the sweeper catches anything queued after.
   */
  async sync(catalogId: string, options: { rebuild?: boolean; waitMs?: number; parts?: number; orphan?: boolean } = {}): Promise<SyncResult | undefined> {
    return this.source.exclusively(catalogId, options.waitMs ?? DEFAULT_WAIT_MS, async () => {
      const catalog = await this.source.catalog(catalogId);
      if (!catalog) {
        // An orphan was found by a scan of every key, so its drop scans too: whatever no name
        // leads to goes with it.
        await this.index.drop(catalogId, { everyKey: options.orphan === true });
        await this.facets?.remove(catalogId, undefined);
        await this.source.dropPending(catalogId);
        return { dropped: true, rebuilt: undefined, applied: 0, parts: undefined };
      }
      const space = await this.spaces.forMap(catalog.map);
      const version = this.versionFor(catalog.map);
      let rebuilt: number | undefined;
      let parts: number | undefined;
      const current = await this.index.version(catalogId);
      if (options.rebuild || current !== version) {
        const started = performance.now();
        const size = await this.source.indexableCount(catalogId);
        // Asked for, or as many as the catalog's size needs, but never fewer than it has: a split
        // an operator asked for outlives the rebuilds a refit triggers.
        parts = options.parts ?? (await this.partsFor(catalogId, size));
        const m = hnswMFor(this.options.hnswM, this.options.hnswLargeFrom, Math.ceil(size / parts));
        rebuilt = await this.index.rebuild(catalogId, version, this.pages(catalogId, space), { parts, m });
        this.log.info(
          { catalogId, products: rebuilt, parts, m, from: current ?? null, to: version, ms: Math.round(performance.now() - started) },
          "vector index rebuilt from MySQL",
        );
      }
      const applied = await this.applyQueued(catalogId, space);
      return { dropped: false, rebuilt, applied, parts };
    });
  }

  private async partsFor(catalogId: string, size: number): Promise<number> {
    const needed = Math.ceil(size / this.options.partSize);
    return Math.min(MAX_INDEX_PARTS, Math.max(await this.index.parts(catalogId), needed));
  }

  /**
   * A sync shared by this process's callers of the moment. Each sync holds a MySQL connection while
   * it waits for the catalog's lock: a burst of searches that all found the index lost would
   * otherwise take the pool's every connection, and the rebuild none left to read with.
   */
  catchUp(catalogId: string, waitMs: number): Promise<SyncResult | undefined> {
    const running = this.catchingUp.get(catalogId);
    if (running) return running;
    const started = this.sync(catalogId, { waitMs }).finally(() => this.catchingUp.delete(catalogId));
    this.catchingUp.set(catalogId, started);
    return started;
  }

  /**
   * Syncs catalogs with queued changes and, with `orphansEveryMs`, drops indexes of catalogs that
   * are gone when no process sharing the index did so within that time (a scan of every key of the
   * index; deletes already drop their own index at once, so this only finds a drop that failed).
   * Catalogs busy elsewhere are left for the next sweep; one catalog's failure does not hold up the others.
   */
  async sweep(options: { orphansEveryMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    const catalogIds = new Set(await this.source.catalogsWithPending(100));
    const orphans = new Set<string>();
    if (options.orphansEveryMs !== undefined && (await this.index.claimOrphanSweep(options.orphansEveryMs))) {
      for (const catalogId of await this.source.inactive(await this.index.catalogIds(options.signal))) orphans.add(catalogId);
    }
    const failures: unknown[] = [];
    for (const catalogId of new Set([...catalogIds, ...orphans])) {
      await this.sync(catalogId, { waitMs: 0, orphan: orphans.has(catalogId) }).catch((error: unknown) => failures.push(error));
    }
    if (failures.length > 0) throw new AggregateError(failures, `vector index sweep: ${failures.length} catalog(s) failed`);
  }

  private async applyQueued(catalogId: string, space: VisualSpace): Promise<number> {
    let applied = 0;
    for (;;) {
      const changes = await this.source.pending(catalogId, PAGE);
      if (changes.length === 0) break;
      const ids = changes.map((c) => c.productId);
      const present = await this.source.indexable(catalogId, ids);
      const kept = new Set(present.map((p) => p.productId));
      const removed = ids.filter((id) => !kept.has(id));
      // Facets before the index's writes and after its removals: a product they name that the
      // index does not hold (yet, or any more) is looked for and left out.
      await this.facets?.write(catalogId, present);
      await this.index.upsert(catalogId, await entriesOf(present, space));
      await this.index.remove(catalogId, removed);
      await this.facets?.remove(catalogId, removed);
      await this.source.acknowledge(catalogId, changes);
      applied += changes.length;
      if (changes.length < PAGE) break;
    }
    return applied;
  }

  private async *pages(catalogId: string, space: VisualSpace): AsyncGenerator<IndexEntry[]> {
    let after: string | undefined;
    for (;;) {
      const page = await this.source.indexablePage(catalogId, after, PAGE);
      if (page.length === 0) return;
      await this.facets?.write(catalogId, page);
      yield await entriesOf(page, space);
      if (page.length < PAGE) return;
      after = page[page.length - 1]!.productId;
    }
  }
}

async function entriesOf(products: readonly IndexableProduct[], space: VisualSpace): Promise<IndexEntry[]> {
  const entries: IndexEntry[] = [];
  for (const product of products) {
    if (entries.length > 0 && entries.length % ENTRIES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    entries.push(entryOf(product, space));
  }
  return entries;
}

function entryOf(product: IndexableProduct, space: VisualSpace): IndexEntry {
  const { image, colour, text } = product.embeddings;
  return {
    productId: product.productId,
    vector: elementVector(space.project(image, colour), text, product.rank),
    attributes: { ...product.metadata, rank: product.rank },
    words: lexicalWords(product.descriptor),
  };
}
