// What the search core needs from storage and from the vector index. Adapters (MySQL, Redis)
// implement these; the core never sees a driver.
import type { JsonObject, Rank } from "../catalogs/index.js";
import type { MetadataFilter } from "./filters.js";
import type { StoredMap } from "./visual-space.js";

export interface ProductEmbeddings {
  image: Float32Array;
  colour: Float32Array;
  text: Float32Array;
}

/** A PROCESSED product with its embeddings: what its index entry is made from. */
export interface IndexableProduct {
  productId: string;
  rank: Rank;
  metadata: JsonObject;
  /** The text its lexical words come from. */
  descriptor: string;
  embeddings: ProductEmbeddings;
}

export interface IndexEntry {
  productId: string;
  vector: Float32Array;
  /** What filters test and results show: the metadata with `rank` set. */
  attributes: JsonObject;
  /** The descriptor's distinct lexical words (lexical.ts). */
  words: readonly string[];
}

export interface IndexHit {
  productId: string;
  /** Cosine similarity of the query and element vectors. */
  cosine: number;
  /** Empty when failsFilters. */
  attributes: JsonObject;
  /**
   * The index found that the element fails the query's filters (and did not read its attributes);
   * it is still one of the nearest elements, so it still bounds the score of what was not returned.
   */
  failsFilters?: boolean;
}

export interface IndexQuery {
  vector: Float32Array;
  /** Most hits wanted, best first. */
  count: number;
  /** Pushed down as far as the index can evaluate them; hits may still fail them (callers post-filter). */
  filters: readonly MetadataFilter[];
  /** Scan every element exactly when the set has at most this many (Infinity: always). */
  exactUpTo: number;
  /**
   * Scan exactly at once, too, a set whose sample says few enough pass the filters that an HNSW
   * walk would come up short of `count` (the answer then says scannedAsRare).
   */
  scanIfRare?: boolean;
  /** The build version the caller expects. */
  expectedVersion: string;
  /**
   * What any build that can answer the query has in common (its layout and text model): a build
   * whose version does not start with it answers "stale" and nothing else. One that does but is
   * not expectedVersion (built with the catalog's previous text-image map) answers, marked not current.
   */
  servableVersionPrefix: string;
  /** Products holding any of these words, besides the nearest elements; count 0 asks for them alone. */
  lexical?: LexicalQuery;
}

export interface LexicalQuery {
  /** The vocabulary the words were expanded with; another one answers "vocabulary" and nothing else. */
  vocabulary: { build: string; size: number };
  /** In order of preference (a common word's holders are read in this order, up to a budget). */
  words: readonly string[];
  /** Every holder of a word held by at most this many products is scored, */
  maxProducts: number;
  /**
   * and of a word held by more (a common word), this many of its first holders (holderOrder), at
   * most commonProducts over all the query's common words in the order of `words`, and the
   * nearest elements that hold it.
   */
  commonWordProducts: number;
  commonProducts: number;
  /** Unit (or zero) query parts each holder's element is dotted with. */
  visual: Float32Array;
  text: Float32Array;
}

/** A holder of a queried word: its element's dot products with the query's parts, and its words. */
export interface LexicalHit {
  productId: string;
  dots: { visual: number; text: number };
  attributes: JsonObject;
  words: readonly string[];
}

export type IndexAnswer =
  | { kind: "stale"; version: string | undefined }
  | { kind: "vocabulary" }
  | {
      kind: "ok";
      size: number;
      exact: boolean;
      /**
       * The hits are every element that can pass the filters (all of them, more than `count` too),
       * best first: nothing outside them needs looking at.
       */
      complete?: boolean;
      current: boolean;
      hits: IndexHit[];
      lexical: LexicalHit[];
      /** A common word has holders beyond those read (LexicalQuery.commonWordProducts). */
      moreCommonHolders: boolean;
      /**
       * An approximate search of some part of the index came up short of `count` and that part
       * was scanned exactly instead (a split catalog completes its parts itself), as the caller
       * would have done had it been asked of one set.
       */
      scannedAfterShort?: boolean;
      /** Some part of the index was scanned at once because its sample found the filters rare (IndexQuery.scanIfRare). */
      scannedAsRare?: boolean;
    };

/** A catalog's vocabulary: its build, and the words of its append-only list from `from` on. */
export interface VocabularyRead {
  /** The build the reader is at with these words (what its next `known` names). */
  build: string | undefined;
  /** Whether the words are the whole list (the build differs from the one asked about). */
  whole: boolean;
  words: string[];
}

/** How a rebuild lays the catalog's index out. */
export interface IndexBuild {
  /** Above 1: split into that many sets, which queries search at once and merge. */
  parts?: number;
  /** HNSW links a node (hnsw-links.ts) of every set of the build, kept for its life; the index's default when unset. */
  m?: number;
}

/** One catalog's nearest-neighbour index over element vectors (see vector-layout.ts). */
export interface VectorIndex {
  query(catalogId: string, query: IndexQuery): Promise<IndexAnswer>;
  upsert(catalogId: string, entries: readonly IndexEntry[]): Promise<void>;
  remove(catalogId: string, productIds: readonly string[]): Promise<void>;
  /** Replaces the whole set with these entries, atomically for readers, and records the version. */
  rebuild(catalogId: string, version: string, pages: AsyncIterable<readonly IndexEntry[]>, build?: IndexBuild): Promise<number>;
  /** How many sets the catalog's index is split into (1: not split, or no index). */
  parts(catalogId: string): Promise<number>;
  /**
   * The catalog's vocabulary: the words added since `known` when it is still the current build,
   * else all of it.
   */
  vocabulary(catalogId: string, known: { build: string; size: number } | undefined): Promise<VocabularyRead>;
  /** The version recorded by the last rebuild; undefined when the catalog has no index. */
  version(catalogId: string): Promise<string | undefined>;
  /** A product's element vector as stored (float rounding aside); undefined when it is not in the index. */
  element(catalogId: string, productId: string): Promise<Float32Array | undefined>;
  /**
   * Everything the index holds of the catalog, found by name: in proportion to the catalog, not to
   * the index. `everyKey` also scans every key for what no name leads to (left by a crash or by an
   * older version): for the orphan sweep, which scans every key anyway.
   */
  drop(catalogId: string, options?: { everyKey?: boolean }): Promise<void>;
  /** Catalogs that have anything in the index (a scan of every key: rarely); `signal` stops the scan. */
  catalogIds(signal?: AbortSignal): Promise<string[]>;
  /**
   * Claims the orphan sweep for the next `ms` among every process sharing the index: false when
   * another one claimed it within its own interval.
   */
  claimOrphanSweep(ms: number): Promise<boolean>;
}

export interface QueuedChange {
  productId: string;
  version: number;
}

/** The index's source of truth and its change queue, in MySQL. */
export interface IndexSource {
  /** undefined when the catalog is unknown or soft-deleted. */
  catalog(catalogId: string): Promise<{ map: StoredMap | undefined } | undefined>;
  /** Of these catalogs, the ones that are unknown or soft-deleted. */
  inactive(catalogIds: readonly string[]): Promise<string[]>;
  pending(catalogId: string, limit: number): Promise<QueuedChange[]>;
  catalogsWithPending(limit: number): Promise<string[]>;
  /** Removes queue rows still at the version that was applied. */
  acknowledge(catalogId: string, changes: readonly QueuedChange[]): Promise<void>;
  dropPending(catalogId: string): Promise<void>;
  /** Those of the ids that are PROCESSED and have embeddings. */
  indexable(catalogId: string, productIds: readonly string[]): Promise<IndexableProduct[]>;
  /** How many of the catalog's products are indexable. */
  indexableCount(catalogId: string): Promise<number>;
  /** Keyset pages of the catalog's indexable products, by id. */
  indexablePage(catalogId: string, afterProductId: string | undefined, limit: number): Promise<IndexableProduct[]>;
  /**
   * Runs work while no other process syncs this catalog's index; undefined (work not run) when
   * another held it for all of waitMs.
   */
  exclusively<T>(catalogId: string, waitMs: number, work: () => Promise<T>): Promise<T | undefined>;
}

/**
 * Which of a catalog's products may pass eq/in filters, from the facets (filter-facets.ts) the
 * catalogs' store keeps of the metadata of the products in its index: a selective filter's
 * candidates named without walking or scanning the vector index.
 */
export interface FacetSource {
  /**
   * Ids of the catalog's products that hold, for every group, one of its facets: every product whose
   * metadata passes the filters the groups came from is among them, with at most a few more (a
   * superset: callers filter exactly). "too many" when more than `most` hold every group's facets
   * alike; undefined when the store cannot tell (its facets of the catalog are still being written,
   * or a group is on `rank`, which is not metadata).
   */
  productsWith(catalogId: string, groups: readonly (readonly string[])[], most: number): Promise<readonly string[] | "too many" | undefined>;
}

/** The facets of the products in a catalog's index, written by the index sync beside the index's own writes. */
export interface FacetStore extends FacetSource {
  /** Replaces these products' facets with those of their metadata (`rank` aside: it is not metadata). */
  write(catalogId: string, products: readonly { productId: string; metadata: JsonObject }[]): Promise<void>;
  /** Removes these products' facets, or every product's of the catalog (undefined). */
  remove(catalogId: string, productIds: readonly string[] | undefined): Promise<void>;
}

/** What search and recommendations read from MySQL per request. */
export interface SearchSource {
  /** The organization's active catalog and its map; undefined when there is none (404). */
  target(organizationId: string, catalogId: string): Promise<{ map: StoredMap | undefined } | undefined>;
  /** A product and, if it has them, its embeddings; undefined when there is no such product. */
  subject(catalogId: string, productId: string): Promise<{ status: string; embeddings: ProductEmbeddings | undefined } | undefined>;
}

export interface SearchLogEntry {
  organizationId: string;
  catalogId: string;
  kind: "search" | "recommendations";
  query: string | undefined;
  productId: string | undefined;
  topK: number;
  visualWeight: number;
  filters: readonly MetadataFilter[];
  resultCount: number;
  tookMs: number;
  sessionId: string | undefined;
  ipAddress: string | undefined;
  userAgent: string | undefined;
  at: Date;
}

/** Records requests off the request path; flush() writes what is buffered. */
export interface SearchLog {
  record(entry: SearchLogEntry): void;
  flush(): Promise<void>;
}
