// Search (a text query against the photos and descriptors) and recommendations (products like a
// given one) are one operation on one index: build a query vector, ask the index for the nearest
// elements, post-filter exactly, and ask again (wider, or exhaustively) until the answer is certain.
import { AppError, invalidArgument, notFound } from "../errors/index.js";
import { parseUuid } from "../catalogs/index.js";
import type { JsonObject } from "../catalogs/index.js";
import type { SentenceEncoder } from "../embeddings/index.js";
import { matchesFilters } from "./filters.js";
import type { MetadataFilter } from "./filters.js";
import { MAX_INDEX_PARTS } from "./index-sync.js";
import type { IndexSync } from "./index-sync.js";
import type { SearchLog, SearchSource, VectorIndex } from "./ports.js";
import type { RecommendationRequest, SearchRequest } from "./requests.js";
import { parseRecommendationRequest, parseSearchRequest } from "./requests.js";
import { LEXICAL_LIMITS, lexicalSimilarity, lexicalWords, NO_LEXICAL_MATCH } from "./lexical.js";
import { elementVisual, queryVector, scoreFromDots } from "./vector-layout.js";
import type { Boosts, QueryVector } from "./vector-layout.js";
import { ShortFilters } from "./short-filters.js";
import { Vocabularies } from "./vocabularies.js";
import { recommendationVisual } from "./visual-space.js";
import type { StoredMap, VisualSpaces } from "./visual-space.js";

const TARGET_CACHE_MS = 1000;
/** The index was built for another view of the catalog than the one the query was made from. */
const STALE = Symbol("stale");
const TARGET_CACHE_ENTRIES = 10_000;

/** How long an index may answer from a previous map's build before this process rebuilds it itself. */
const REBUILD_GRACE_MS = 30_000;

/** How long a request waits for a rebuild of its catalog's index that another process is running. */
const REBUILD_WAIT_MS = 20_000;

const indexBusy = (catalogId: string) =>
  new AppError("unavailable", `the search index of catalog ${catalogId} is being rebuilt; retry shortly`);

export interface SearchSettings {
  boosts: Boosts;
  /** Catalogs with at most this many searchable products are scanned exactly. */
  exactUpTo: number;
  /** Whether a search's words also match descriptors letter for letter. */
  lexical: boolean;
  /**
   * Every holder of a matched word held by at most this many products is scored, about 1.4 us of
   * CPU each; of a word held by more (a "common" word, like "men" or a large brand in a large
   * catalog), only its first holders (boosted, then fewest words: holderOrder), as many as the
   * query asks for, and the nearest elements that hold it (README "Lexical matching at scale").
   */
  lexicalMaxHolders: number;
}

export interface SearchHit {
  productId: string;
  score: number;
  metadata: JsonObject;
}

export interface RecommendationHit {
  productId: string;
  score: number;
  /** Absent when metadata was not asked for. */
  metadata: JsonObject | undefined;
}

interface Want {
  topK: number;
  threshold: number;
  filters: readonly MetadataFilter[];
  exclude: string | undefined;
}

/** What a search's words are matched with lexically (lexical.ts), and the weights to score holders. */
interface TypedWords {
  words: readonly string[];
  /** The query's unit vector compared with photos: its word vector beside its words' prototypes. */
  visual: Float32Array;
  /** The query's unit text vector (zero for unknown words), compared with descriptors. */
  text: Float32Array;
  visualWeight: number;
}

/**
 * How far a query with no meaning widens the reading of its common words' first holders when too
 * few pass its filters: four times more at each step while fewer than this were read (10, 40,
 * 160, 640 for a topK of 10).
 */
const COMMON_HOLDERS_WIDEN_UP_TO = 500;

/** Reads of a vocabulary one query may need when other processes keep adding words. */
const VOCABULARY_READS = 5;

interface Scored {
  productId: string;
  score: number;
  attributes: JsonObject;
  failsFilters?: boolean;
}

/**
 * How many times more to ask for, by what an answer showed of the filters' and threshold's pass
 * rate (`certain` of `topK` passed): enough for about 1.5 topK more to pass; twice at least, four
 * times when none did (each step reads every element again, and a post-filtered HNSW one costs in
 * proportion to what it asks).
 */
function widening(certain: number, topK: number): number {
  return Math.min(4, Math.max(2, Math.ceil((1.5 * topK) / Math.max(certain, 1))));
}

const byScore = (a: Scored, b: Scored) => b.score - a.score || (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0);

export class Searcher {
  private readonly targets = new Map<string, { target: { map: StoredMap | undefined }; until: number }>();
  private readonly vocabularies: Vocabularies;
  /** Catalogs whose index was last seen built from a previous map, and since when. */
  private readonly outdatedSince = new Map<string, number>();
  private readonly shortFilters = new ShortFilters();

  constructor(
    private readonly source: SearchSource,
    private readonly index: VectorIndex,
    private readonly sync: IndexSync,
    private readonly spaces: VisualSpaces,
    private readonly text: SentenceEncoder,
    private readonly searchLog: SearchLog,
    private readonly settings: SearchSettings,
  ) {
    this.vocabularies = new Vocabularies(index);
  }

  async search(raw: SearchRequest): Promise<SearchHit[]> {
    const started = performance.now();
    const request = parseSearchRequest(raw);
    const words = this.text.encode(request.query);
    const lexical = this.settings.lexical ? lexicalWords(request.query, LEXICAL_LIMITS.maxQueryWords) : [];
    const want = { ...request, threshold: request.similarityThreshold, exclude: undefined };
    const hits = await this.withTarget(request.organizationId, request.catalogId, async (target) => {
      // The visual side through the catalog's map (its words' prototypes); parsed maps are cached
      // per version, so this is a lookup but for a map's first query in this process.
      const space = await this.spaces.forMap(target.map);
      const visual = space.query ? space.query(request.query, words) : words;
      const query = queryVector({ visual, text: words, visualWeight: request.visualWeight, boosts: this.settings.boosts });
      const typed = { words: lexical, visual, text: words, visualWeight: request.visualWeight };
      // A query of words the model does not know matches on its letters alone; with no letters
      // either (punctuation, emoji), nothing, rather than everything alike.
      return query || typed.words.length > 0 ? this.nearest(request.catalogId, target.map, query, want, typed) : [];
    });
    this.searchLog.record({
      ...request,
      kind: "search",
      productId: undefined,
      resultCount: hits.length,
      tookMs: performance.now() - started,
      ...request.analytics,
      at: new Date(),
    });
    return hits.map((h) => ({ productId: h.productId, score: h.score, metadata: h.attributes }));
  }

  async recommend(raw: RecommendationRequest): Promise<RecommendationHit[]> {
    const started = performance.now();
    const request = parseRecommendationRequest(raw);
    const want = { ...request, threshold: -Infinity, exclude: request.productId };
    const hits = await this.withTarget(request.organizationId, request.catalogId, async (target) => {
      // Both lookups at once: the index's copy of the subject is only used if MySQL has it.
      const [subject, stored] = await Promise.all([
        this.source.subject(request.catalogId, request.productId),
        this.index.element(request.catalogId, request.productId),
      ]);
      if (!subject) throw notFound(`product ${request.productId} not found in catalog ${request.catalogId}`);
      if (!subject.embeddings) {
        throw new AppError(
          "failed_precondition",
          `product ${request.productId} has no vectors yet (status ${subject.status}); recommendations need a processed product`,
        );
      }
      const { image, colour, text } = subject.embeddings;
      // The index holds the subject's projected photo when it is searchable: projecting it again
      // through a kernel map costs about 1 ms of CPU. Products not in the index (in ERROR, or not
      // yet synced) are projected here. A stale index fails the query below and the call is redone.
      const photo = (stored && elementVisual(stored, text.length)) ?? (await this.spaces.forMap(target.map)).project(image, colour);
      const query = queryVector({ visual: recommendationVisual(photo, text), text, visualWeight: request.visualWeight, boosts: this.settings.boosts });
      return query ? this.nearest(request.catalogId, target.map, query, want) : [];
    });
    this.searchLog.record({
      ...request,
      kind: "recommendations",
      query: undefined,
      resultCount: hits.length,
      tookMs: performance.now() - started,
      sessionId: undefined,
      ipAddress: undefined,
      userAgent: undefined,
      at: new Date(),
    });
    return hits.map((h) => ({ productId: h.productId, score: h.score, metadata: request.includeMetadata ? h.attributes : undefined }));
  }

  /** Writes the buffered search log rows now (tests, shutdown). */
  async flushLog(): Promise<void> {
    await this.searchLog.flush();
  }

  /**
   * Rebuilds the catalog's index from MySQL (an operator's repair, or a split into `parts` sets;
   * unset keeps the catalog's split, or makes the one its size needs).
   */
  async reindex(organizationId: string, catalogId: string, parts?: number): Promise<{ indexed: number; parts: number }> {
    const id = parseUuid(catalogId, "catalogId");
    const orgId = parseUuid(organizationId, "organizationId");
    if (parts !== undefined && (!Number.isInteger(parts) || parts < 1 || parts > MAX_INDEX_PARTS)) {
      throw invalidArgument(`parts must be an integer from 1 to ${MAX_INDEX_PARTS}, got ${parts}`);
    }
    await this.target(orgId, id);
    const result = await this.sync.sync(id, { rebuild: true, waitMs: REBUILD_WAIT_MS, parts });
    if (!result) throw indexBusy(id);
    return { indexed: result.rebuilt ?? 0, parts: result.parts ?? 1 };
  }

  /**
   * The index answered from a build of the catalog's previous map. The worker that refitted the map
   * rebuilds it at once; if that has not happened within REBUILD_GRACE_MS (the worker died, Redis
   * was away), this process rebuilds it in the background. Queries meanwhile use the previous build.
   */
  private rebuildIfLeft(catalogId: string): void {
    const now = Date.now();
    const since = this.outdatedSince.get(catalogId);
    if (since === undefined) {
      if (this.outdatedSince.size >= TARGET_CACHE_ENTRIES) this.outdatedSince.clear();
      this.outdatedSince.set(catalogId, now);
      return;
    }
    if (now - since < REBUILD_GRACE_MS) return;
    this.outdatedSince.set(catalogId, now);
    // waitMs 0: if another process holds the catalog's index, it is rebuilding it already.
    this.sync.sync(catalogId, { waitMs: 0 }).then(
      () => this.outdatedSince.delete(catalogId),
      () => undefined,
    );
  }

  /**
   * The organization's active catalog, remembered for TARGET_CACHE_MS: a lookup per request is a
   * large share of a search's time. A stale entry is harmless: the index answers "stale" for an
   * out-of-date map or a dropped catalog, and the query then looks again (see nearest).
   */
  private async target(organizationId: string, catalogId: string, fresh = false): Promise<{ map: StoredMap | undefined }> {
    const key = `${organizationId}/${catalogId}`;
    const cached = this.targets.get(key);
    if (!fresh && cached && cached.until > Date.now()) return cached.target;
    this.targets.delete(key);
    const target = await this.source.target(organizationId, catalogId);
    if (!target) throw notFound(`catalog ${catalogId} not found`);
    if (this.targets.size >= TARGET_CACHE_ENTRIES) this.targets.delete(this.targets.keys().next().value!);
    this.targets.set(key, { target, until: Date.now() + TARGET_CACHE_MS });
    return target;
  }

  /**
   * Runs a query against the catalog as last seen. If the index reports it stale, the catalog is
   * looked up afresh (it may have been deleted, or its map refitted since) and the query runs once
   * more, rebuilt from the fresh view; only then is the index itself repaired (see nearest).
   */
  private async withTarget<T>(organizationId: string, catalogId: string, run: (target: { map: StoredMap | undefined }) => Promise<T | typeof STALE>): Promise<T> {
    const first = await run(await this.target(organizationId, catalogId));
    if (first !== STALE) return first;
    const again = await run(await this.target(organizationId, catalogId, true));
    if (again === STALE) throw indexBusy(catalogId);
    return again;
  }

  /**
   * The topK best products that pass the filters and the threshold, by the documented score. The
   * vector index ranks by everything but the lexical term; every product holding a matched word
   * held by at most lexicalMaxHolders products comes back with the query, scored in full, so a
   * product outside both lists has a score of at most the last nearest element's, unless it holds a
   * common word (then the answer is approximate: README "Lexical matching at scale"). The index may
   * return elements that fail the filters
   * (it evaluates what it can), and an approximate filtered search may stop exploring early; so this
   * widens the request until it holds topK certain passing products, the rest fall below the
   * threshold, or an exact scan has seen every element.
   */
  private async nearest(
    catalogId: string,
    map: StoredMap | undefined,
    query: QueryVector | undefined,
    want: Want,
    typed?: TypedWords,
  ): Promise<Scored[] | typeof STALE> {
    const expectedVersion = this.sync.versionFor(map);
    // Wanted of each source of candidates: the nearest elements and a common word's holders.
    let wanted = want.topK + (want.exclude === undefined ? 0 : 1);
    if (want.filters.length > 0) wanted *= 2;
    let count = query ? wanted : 0;
    // A filter that left the approximate search short lately is scanned at once, and one never seen
    // short is scanned at once when the index's sample finds it rare (short-filters.ts).
    const filterKey = want.filters.length > 0 ? `${catalogId}\n${JSON.stringify(want.filters)}` : undefined;
    const plan = filterKey && count > 0 ? this.shortFilters.plan(filterKey) : "walk";
    let exactUpTo = plan === "scan" ? Infinity : this.settings.exactUpTo;
    let synced = false;
    let vocabularyReads = 0;
    let vocabulary = typed && typed.words.length > 0 ? await this.vocabularies.get(catalogId) : undefined;
    for (;;) {
      const expanded = typed && vocabulary ? vocabulary.expand(typed.words) : undefined;
      // Unknown words that match no catalog word either: nothing to rank by (the index still checks
      // its version first, so a stale or lost index is found out and rebuilt).
      const answer = await this.index.query(catalogId, {
        vector: query?.vector ?? new Float32Array(0),
        count,
        filters: want.filters,
        exactUpTo,
        scanIfRare: plan === "sample",
        expectedVersion,
        servableVersionPrefix: this.sync.servableVersionPrefix(),
        lexical:
          typed && vocabulary && expanded
            ? {
                vocabulary: { build: vocabulary.build, size: vocabulary.size },
                words: expanded.words,
                maxProducts: this.settings.lexicalMaxHolders,
                commonWordProducts: wanted,
                commonProducts: wanted * typed.words.length,
                visual: typed.visual,
                text: typed.text,
              }
            : undefined,
      });
      if (answer.kind === "stale") {
        if (synced) return STALE;
        // The index lost its data, or the model changed since it was built; or this view of the
        // catalog is out of date, which the sync finds out (and the caller then looks again).
        if (!(await this.sync.catchUp(catalogId, REBUILD_WAIT_MS))) throw indexBusy(catalogId);
        synced = true;
        if (typed && typed.words.length > 0) vocabulary = await this.vocabularies.refresh(catalogId);
        continue;
      }
      if (answer.kind === "vocabulary") {
        // Words were added (or the index rebuilt) since this process read the vocabulary.
        if (++vocabularyReads > VOCABULARY_READS) throw indexBusy(catalogId);
        vocabulary = await this.vocabularies.refresh(catalogId);
        continue;
      }
      if (typed && typed.words.length > 0 && !vocabulary && answer.size > 0) {
        // An index with elements but no vocabulary is between a rebuild's commit and this read.
        if (++vocabularyReads > VOCABULARY_READS) throw indexBusy(catalogId);
        vocabulary = await this.vocabularies.refresh(catalogId);
        continue;
      }
      if (!answer.current) this.rebuildIfLeft(catalogId);
      const lexical = new Map<string, Scored>();
      if (expanded && typed) {
        for (const h of answer.lexical) {
          const similarity = lexicalSimilarity(expanded, h.words);
          if (similarity === NO_LEXICAL_MATCH && !query) continue;
          const rank = (h.attributes.rank ?? "NO_BOOST") as Parameters<typeof scoreFromDots>[1];
          const score = scoreFromDots(h.dots, rank, { visualWeight: typed.visualWeight, boosts: this.settings.boosts }, similarity);
          lexical.set(h.productId, { productId: h.productId, score, attributes: h.attributes });
        }
      }
      const nearest = answer.hits.map((h) => ({ productId: h.productId, score: query!.score(h.cosine), attributes: h.attributes, failsFilters: h.failsFilters }));
      const short = nearest.length < count && !answer.exact;
      // Approximate answers tell whether the filter left HNSW short; so does a split catalog's
      // exact one when it had to scan a part after a short search, and a scan at once of a rare
      // filter counts as a short search.
      if (filterKey && count > 0 && (!answer.exact || answer.scannedAfterShort || answer.scannedAsRare)) {
        this.shortFilters.note(filterKey, short || answer.scannedAfterShort === true || answer.scannedAsRare === true);
      }
      if (short) {
        // Fewer than asked from an approximate filtered search, which may have given up early.
        exactUpTo = Infinity;
        continue;
      }
      const seenAll = count === 0 || answer.complete === true || nearest.length < count || count >= answer.size;
      // Every product in neither list scores at most this: the index ranks by the vector part.
      const bound = seenAll ? -Infinity : nearest[nearest.length - 1]!.score;
      const passing = [...lexical.values(), ...nearest.filter((h) => !lexical.has(h.productId))]
        .filter((h) => !h.failsFilters && h.productId !== want.exclude && h.score >= want.threshold && matchesFilters(want.filters, h.attributes))
        .sort(byScore);
      if (count === 0 && answer.moreCommonHolders && passing.length < want.topK && wanted < COMMON_HOLDERS_WIDEN_UP_TO) {
        // No meaning to rank by, and the first holders read of a common word were too few to pass
        // the filters and threshold: read more of them.
        wanted *= 4;
        continue;
      }
      if (seenAll || bound < want.threshold) return passing.slice(0, want.topK);
      // A nearest element is certain whatever its score: the documented score is at least its
      // vector part, the bound or above. A lexical holder's score, from its dots in float64, can
      // fall 1e-9 to 1e-7 under the index's float32 cosine: on the bench at 100k, 13% of the
      // queries asked again for that alone (twice the Redis work).
      const nearestIds = new Set(nearest.map((h) => h.productId));
      const certain = passing.filter((h) => h.score >= bound || nearestIds.has(h.productId));
      if (certain.length >= want.topK) return certain.slice(0, want.topK);
      count = Math.min(count * widening(certain.length, want.topK), answer.size);
      wanted = count;
    }
  }
}
