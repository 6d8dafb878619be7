// What one hash tag holds of the vector index, on Redis >= 8 vector sets (HNSW, cosine): one vector
// set of element vectors whose attributes are the products' filterable metadata, one hash with the
// build version, and the lexical index (lexical-script.ts). All keys share the tag, so they live on
// one Redis Cluster slot and the query script can touch them all. The tag is a catalog's id, or, for
// a catalog split into parts (vector-index.ts), a part's "<catalogId>~<generation>.<k>"; the
// catalog's own meta hash then names its parts instead of holding a set.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { forEachPrimary } from "./connection.js";
import type { RedisClient } from "./connection.js";
import { attributeFacets, filterFacetGroups, holderOrder, matchesFilters, tokenHead, unfilteredEfFor } from "../../search/index.js";
import type { FacetSource, IndexAnswer, IndexEntry, IndexHit, IndexQuery, LexicalHit, VocabularyRead } from "../../search/index.js";
import type { JsonObject } from "../../catalogs/index.js";
import { pushedFilters, redisAttributesJson, redisFilterExpression } from "./filter-expression.js";
import { FilterShares } from "./filter-shares.js";
import { CandidateSets, heldSizeOf, keyOf } from "./candidate-sets.js";
import type { CandidateSet } from "./candidate-sets.js";
import { FilterLearning } from "./filter-learning.js";
import type { LearningOutcome } from "./filter-learning.js";
import { sampledIds } from "./sampled-ids.js";
import { attributesOf, CandidateScores, partDots, wordsOf } from "./candidate-scores.js";
import type { CandidateResult } from "./candidate-scores.js";
import { HeldCandidates } from "./held-candidates.js";
import type { Candidate } from "./held-candidates.js";
import { HolderCache, stampLines } from "./holder-cache.js";
import type { CachedHolder } from "./holder-cache.js";
import { docParts, docWords, HOLDERS_SCRIPT, LEARNED_CATCH_UP, LEXICAL_PUT_SCRIPT, VOCABULARY_SCRIPT } from "./lexical-script.js";
import { fewToName, namedInsteadOfScan } from "./named-first-asks.js";
import { NEAREST_SCRIPT } from "./nearest-script.js";
import { commonWordNearest, QUERY_SCRIPT } from "./query-script.js";
import { TagFacts, ThreadedVsim } from "./threaded-nearest.js";
import type { ScriptCall, ThreadedNearest } from "./threaded-nearest.js";
import { NearestCopies } from "./nearest-copies.js";
import { HELD_CHARS, HELD_QUERIES, HeldHolders, heldHoldersKey } from "./held-holders.js";
import { generationBuild } from "./generation.js";
import { bytesToVector, vectorToBytes as fp32, VectorSlabs } from "../fp32.js";

export interface RedisVectorIndexOptions {
  /** Prepended to every key, e.g. "vitrine:"; lets several deployments or tests share a server. */
  keyPrefix: string;
  /** HNSW search breadth; raised to the requested count when that is larger. */
  ef: number;
  /**
   * An unfiltered search of a set of more than `largeFrom` elements walks at this breadth instead
   * (at least `ef`), and a query with a common word there asks COMMON_WORD_NEAREST_LARGE times its
   * count: recall@10 0.95 at 1M (README "How deep an unfiltered search goes"). Unset: every set as a small one.
   */
  large?: { ef: number; from: number };
  /**
   * Keep field postings and a copy of every element and its attributes beside the set, so that
   * selective eq/in filters are answered by scoring their few candidates exactly (README:
   * "Filtered search"). About 1.6 KB more Redis memory per product; off by default.
   */
  filterPostings?: boolean;
  /**
   * Metadata fields whose every value gets a vector set of its own in builds begun from now on
   * (needs filterPostings): an eq filter on one is answered by HNSW over just its products.
   */
  valueSetFields?: readonly string[];
  /** Lexical holders kept in this process between queries (holder-cache.ts); 0 reads them every time. */
  holderCacheEntries?: number;
  /**
   * Without filterPostings, learn the matches of an eq/in filter asked again and hold them as
   * candidates in the holder cache's room (filter-learning.ts); off when unset.
   */
  filterLearning?: boolean;
  /**
   * Names a selective eq/in filter's candidates from the catalogs' store (storage/mysql/product-facets.ts):
   * its first ask (the set's sample finding it rare, or few pass it: named-first-asks.ts) is then learned at
   * once from them and answered exactly, instead of walking or scanning the set. Needs filterLearning.
   */
  facets?: FacetSource;
  /** Told how each learning ended (filter-learning.ts), with the error of one that failed: metrics and logs. */
  onLearning?: (outcome: LearningOutcome, error?: unknown) => void;
  /**
   * Connections that carry only VSIMs, so that unfiltered HNSW searches run on Redis's threads
   * instead of its main thread (threaded-nearest.ts); none: every query is one script call.
   */
  vsimConnections?: readonly RedisClient[];
}

const PIPELINE = 500;
/** Keys unlinked a call when a build's keys go (dropBuilds). */
const UNLINK_BATCH = 1000;
/** A build's keys with fixed names (lexical-script.ts); `vocab` and `fdocs` name the others, so go last. */
const BUILD_KEYS = ["docs", "vec", "attr", "writes", "wlog", "valuesets", "vocab", "fdocs"];

/**
 * Filters whose eq/in postings hold at most this many elements are answered by scoring those
 * elements exactly instead of HNSW (README: "Filtered search").
 */
const EXACT_CANDIDATES = 3000;
/**
 * A filter whose candidates this process holds (candidate-sets.ts), or is about to, is answered
 * from up to this many when plain HNSW cannot be asked for enough elements (MAX_POSTFILTER_COUNT):
 * held, 10,000 cost less than the pushed-down filter they replace, which misses (a 1% filter at 1M).
 */
const EXACT_CANDIDATES_HELD = 12_000;
/**
 * Most elements asked of plain HNSW (EF as large) for filters passed by many elements: beyond it
 * the filter is pushed down instead. 2,000 (a 1% filter at 1M) cost as much Redis CPU as the
 * pushed-down filter, most of it HNSW's own search (README "Filtered search").
 */
const MAX_POSTFILTER_COUNT = 1000;
/**
 * Most value-set elements scanned exactly with a filter whose other groups pass few of them
 * (VALUE_SET_SCAN_SHARE): about 1 us each in a 1M catalog's Redis (100,000 cost 111 ms of its CPU a
 * search; 0.4 us each in a Redis holding only those 100,000), so the scan stays near HNSW's 19 ms there.
 */
const VALUE_SET_SCAN_MOST = 20_000;
/** FILTER-EF per requested hit of a pushed-down filter (raising it bought recall at 3-5x the time). */
const FILTER_EF_PER_HIT = 100;
/**
 * HNSW's depth for a pushed-down filter is at least this many times the count asked, however few
 * pass (the rest is sized by the share that passes: filter-shares.ts): raw at 100k, a 1% filter
 * walked keeping twice the 20 asked gave recall 0.954, as SEARCH_EF 250 did; keeping 20, 0.926.
 */
const FILTERED_EF_PER_HIT = 2;
/**
 * A set of more elements than this walks a pushed-down filter at SEARCH_EF whatever the share: at
 * 1M in two parts of 500,000 (M 16, where unfiltered recall is 0.74) the sized walk lost recall on
 * a 10% filter (0.850 against 0.905) for no speed; on M 32 graphs of 500,000 raw recall on that
 * filter was 0.943 at EF 250, 0.918 at 100 and 0.872 at 40. At 100k it cost 0.008-0.013 for p50
 * 27-38% lower.
 */
const SIZED_WALK_MOST = 200_000;
/**
 * An exact scan (VSIM TRUTH: a filter asked exactly, or a set up to SEARCH_EXACT_UP_TO) of more
 * elements than this runs on Redis's threads like an HNSW search (threaded-nearest.ts): in the
 * script it would hold Redis's main thread for its whole length (at 100k 15-24 ms, about 70 with a
 * filter to evaluate on every element; about ten times that at 1M), where a smaller one costs less
 * than the extra round trip.
 */
const SCAN_ON_THREADS_FROM = 10_000;
/** VADD's M when none is given, and so the M of every build from before builds recorded theirs. */
const DEFAULT_HNSW_M = 16;

/**
 * Holders read a HOLDERS_SCRIPT call when a filter's matches are learned: without field postings
 * each costs a VEMB and a VGETATTR (about 15-20 us of Redis's main thread), so 10,000 of them in
 * one call would hold up every other client for 150-200 ms; 250, for 4-5 ms.
 */
const LEARNED_HOLDERS_PER_CALL = 250;
/**
 * A learned set holds at most this share of the holder cache's room (SEARCH_HOLDER_CACHE 50,000:
 * 6,250, a 1% filter at 1M in two parts), so that a few broad filters do not crowd out the many
 * selective ones that HNSW answers worst. Learned, 10,000 matches (a 10% filter at 100k) cost a
 * scan, 10,000 reads and old-generation garbage once evicted: asked in turn with nine others,
 * p99 at 1 client went from 21 ms to 48.
 */
const LEARNED_SHARE_OF_CACHE = 1 / 8;
/** The share of a sample's estimate of a filter's matches taken as their fewest (leastMatches). */
const LEAST_MATCHES_OF_ESTIMATE = 0.5;

/**
 * The products of a tag's set (of its catalog, when not split) that the catalogs' store finds may
 * pass a filter's facet groups, at most `most` (FacetSource.productsWith).
 */
export type NamedProducts = (groups: readonly (readonly string[])[], most: number) => Promise<readonly string[] | "too many" | undefined>;

/**
 * QUERY_SCRIPT's answer; one of HNSW or a scan names the common words among the query's (if any),
 * and without field postings the build's generation ("<build>:<write count>"). "written": a
 * filter's learned candidates (learn) are no longer as the build is, and were dropped.
 */
type ScriptedAnswer =
  | Exclude<IndexAnswer, { kind: "ok" }>
  | SplitAnswer
  | { kind: "written"; generation: string }
  | (Extract<IndexAnswer, { kind: "ok" }> & { commonWords?: readonly string[]; generation?: string; holderLines?: string });

/** The catalog's own tag says it is split: its layout, "<generation>.<parts>" (vector-index.ts). */
export interface SplitAnswer {
  kind: "split";
  layout: string;
}

/** A rebuild of one tag's keys, written aside; readers see none of it before commit. */
export interface SlotBuild {
  add(entries: readonly IndexEntry[]): Promise<void>;
  /** Switches readers to this build, recorded at `version`; `count` entries were added. */
  commit(version: string, count: number): Promise<void>;
}

export class SlotIndex {
  private readonly holders: HolderCache;
  private readonly candidateSets: CandidateSets;
  private readonly learning = new FilterLearning();
  /** The filter being learned now, if any: one at a time, so that learning never crowds out searches. */
  private learningNow: Promise<void> | undefined;
  private readonly threaded: ThreadedVsim;
  private readonly facts = new TagFacts();
  /** What queries read of their nearest elements, as of a generation of their build: for one round trip. */
  private readonly copies: NearestCopies;
  /** The holders of queries' words, as of a generation of their build: a VSIM with no script ahead. */
  private readonly heldHolders: HeldHolders;
  /** How many of a tag's elements a filter passes, from a sample: how deep a filtered walk goes. */
  private readonly filterShares: FilterShares;
  /** Stamps of this process's index writes: unique per process, then counted. */
  private readonly stampPrefix = randomBytes(6).toString("base64url");
  private stamps = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisVectorIndexOptions,
  ) {
    this.holders = new HolderCache(options.holderCacheEntries ?? 0);
    // As many candidates as holders: they are mostly the same objects.
    this.candidateSets = new CandidateSets(options.holderCacheEntries ?? 0);
    this.copies = new NearestCopies(options.holderCacheEntries ?? 0);
    this.heldHolders = new HeldHolders({ entries: options.holderCacheEntries ? HELD_QUERIES : 0, chars: HELD_CHARS });
    this.filterShares = new FilterShares((tag, size) => this.sampleAttributes(tag, size));
    this.threaded = new ThreadedVsim(options.vsimConnections ?? [], {
      vitrineQuery: { numberOfKeys: 3, lua: QUERY_SCRIPT },
      vitrineNearest: { numberOfKeys: 3, lua: NEAREST_SCRIPT },
    });
    redis.defineCommand("vitrineQuery", { numberOfKeys: 3, lua: QUERY_SCRIPT });
    redis.defineCommand("vitrineNearest", { numberOfKeys: 3, lua: NEAREST_SCRIPT });
    redis.defineCommand("vitrineHolders", { numberOfKeys: 3, lua: HOLDERS_SCRIPT });
    redis.defineCommand("vitrineLexicalPut", { numberOfKeys: 2, lua: LEXICAL_PUT_SCRIPT });
    redis.defineCommand("vitrineVocabulary", { numberOfKeys: 2, lua: VOCABULARY_SCRIPT });
  }

  /**
   * `share`: the part of the catalog this tag holds (1 / its parts), which scales the work a filter
   * may cost here (candidates scored exactly, elements asked of plain HNSW), so that a split
   * catalog's query costs about what one set's would.
   */
  async query(tag: string, query: IndexQuery, share = 1, named?: NamedProducts): Promise<IndexAnswer | SplitAnswer> {
    const learnable = this.learnableGroups(tag, query);
    const size = this.facts.size(tag);
    const namedUpTo = learnable !== undefined && named !== undefined ? this.namedUpTo(tag, query, learnable, size, share) : undefined;
    if (learnable) {
      // A filter the catalogs' store names at this ask is learned by fromNamed, not beside it.
      const answer = await this.fromLearned(tag, query, learnable, share, namedUpTo === undefined, named);
      if (answer) return answer;
    }
    if (namedUpTo !== undefined && learnable && named) {
      const answer = await this.fromNamed(tag, query, learnable, share, named, namedUpTo);
      if (answer) return answer;
    }
    const rare = this.rarelyPassed(tag, query, size);
    const asked = rare ? { ...query, exactUpTo: Number.POSITIVE_INFINITY } : query;
    const marked = <T extends IndexAnswer | SplitAnswer>(answer: T): T => (rare && answer.kind === "ok" ? { ...answer, scannedAsRare: true } : answer);
    if (size !== undefined && this.threadable(tag, asked, size)) {
      const answer = await this.queryThreaded(tag, asked, size <= asked.exactUpTo);
      if (answer) return marked(answer);
    }
    const answer = await this.queryScripted(tag, asked, share);
    // A learned set written away, dropped by now: the query is asked again without it.
    return answer.kind === "written" ? this.query(tag, query, share) : marked(answer);
  }

  /**
   * Whether a query that may be scanned at once when its filters are rare (scanIfRare) is: pushed
   * down into an HNSW walk (no field postings, whose paths count the candidates themselves) of a
   * set the tag's sample finds few enough pass that the walk would come up short (filter-shares.ts).
   */
  private rarelyPassed(tag: string, query: IndexQuery, size: number | undefined): boolean {
    if (!query.scanIfRare || query.count === 0 || query.filters.length === 0 || size === undefined || size <= query.exactUpTo) return false;
    if (this.withPostings(tag)) return false;
    const pushed = pushedFilters(query.filters);
    return pushed.length > 0 && this.filterShares.rare(tag, pushed);
  }

  /**
   * The posting groups of a query whose filter's matches may be learned (learn): every filter
   * eq/in, so that the groups name the filter whole, and some of it pushed down; no field postings
   * (with them the query script holds candidates itself); VSIMs on threads for the scan, and held
   * sets kept at all.
   */
  private learnableGroups(tag: string, query: IndexQuery): string[][] | undefined {
    if (!this.options.filterLearning || query.count === 0 || query.filters.length === 0 || !this.threaded.available) return undefined;
    if ((this.options.holderCacheEntries ?? 0) === 0) return undefined;
    if (this.withPostings(tag)) return undefined;
    const groups = filterFacetGroups(query.filters);
    if (groups.length !== query.filters.length) return undefined;
    // The scan's FILTER must narrow it: an expression only ever widens the matches (the caller
    // post-filters), so the learned set is the scan's matches that pass the filters.
    return redisFilterExpression(query.filters) === undefined ? undefined : groups;
  }

  /**
   * A filter's answer from the candidates this process learned of it, if still as the build is;
   * else undefined, after starting to learn them (`mayLearn`) when filter-learning.ts says so.
   */
  private async fromLearned(
    tag: string,
    query: IndexQuery,
    groups: string[][],
    share: number,
    mayLearn: boolean,
    named: NamedProducts | undefined,
  ): Promise<IndexAnswer | SplitAnswer | undefined> {
    const key = keyOf(tag, groups);
    if (this.candidateSets.get(tag, groups)) {
      const answer = await this.queryScripted(tag, query, share);
      if (answer.kind !== "written") {
        if (answer.kind === "ok") this.learning.served(key);
        return answer;
      }
      this.learning.lost(key, answer.generation);
    }
    // Not before the set's size is known (an answer tells it), nor while the held sets have no room
    // for one candidate: they are asked more often, and no scan is sent.
    const size = this.facts.size(tag) ?? Number.POSITIVE_INFINITY;
    // One at a time: filters asked in turn, each learned beside its search, took Redis's threads
    // and main thread from the searches (at 100k, 100 shops asked in turn by 8 clients: p99 1.4 s).
    if (mayLearn && this.learning.shouldLearn(key, size) && !this.learningNow && this.candidateSets.fits(tag, groups, this.leastMatches(tag, query, size))) {
      // Beside the query, which is answered as usual: no search waits for a scan and thousands of
      // reads (at 100k, 10,000 matches took a search 335 ms). A learning that fails (Redis away) is
      // only a set not held: the query's own calls meet the same failure and report it.
      this.learningNow = this.learn(tag, query, groups, key, share, named)
        .then(
          (outcome) => outcome && this.options.onLearning?.(outcome),
          (error: unknown) => {
            this.learning.lost(key);
            this.options.onLearning?.("failed", error);
          },
        )
        .finally(() => (this.learningNow = undefined));
      return undefined;
    }
    // Counted as asked (a learning ask once it is done): a filter asked more often than a held one takes its room.
    this.candidateSets.noteAsked(tag, groups, Number.POSITIVE_INFINITY, false);
    return undefined;
  }

  /**
   * The fewest matches a filter not held may have, as the tag's sample tells (1 while it cannot
   * tell): a learning is not started unless that many would find room in the held sets. Checked
   * only after its matches were named (or scanned) and counted, half the learnings of 50 pairs of
   * 2% filters asked in turn at 100k read 2,001 rows from MySQL each to find no room for them
   * (session 62); half the estimate, as the sample of 1,000 misses a 2% filter's count by a fifth.
   */
  private leastMatches(tag: string, query: IndexQuery, size: number): number {
    const share = this.filterShares.share(tag, pushedFilters(query.filters));
    if (share === undefined || !Number.isFinite(size)) return 1;
    return Math.max(1, Math.floor(share * size * LEAST_MATCHES_OF_ESTIMATE));
  }

  /**
   * Up to how many products a learnable filter not held is named by the catalogs' store at this
   * ask (undefined: not named), of a set larger than is scanned exactly anyway (named-first-asks.ts,
   * its filters pushed down, the others only narrow it): as many as a learned set holds when its
   * sample finds few of its elements pass it; else as many as cost less to read than a scan, when
   * the sample finds no more pass, or a scan is asked (a walk came up short, or lately did). Of
   * several filters, one the store can name the few of (someGroupFew); and not named too many lately.
   */
  private namedUpTo(tag: string, query: IndexQuery, groups: string[][], size: number | undefined, share: number): number | undefined {
    if (query.count === 0 || size === undefined) return undefined;
    const scanAsked = query.exactUpTo === Number.POSITIVE_INFINITY;
    if (size <= query.exactUpTo && !scanAsked) return undefined;
    const passing = this.filterShares.share(tag, pushedFilters(query.filters));
    // A rare filter (filter-shares.ts: at most 2 of a full sample) is among those fewToName names.
    const few = passing !== undefined && fewToName(passing, size);
    const most = Math.min(this.learnedMost(share), few ? Number.POSITIVE_INFINITY : namedInsteadOfScan(size, passing, scanAsked));
    if (most < 1 || !this.someGroupFew(tag, query, most)) return undefined;
    return this.learning.mayName(keyOf(tag, groups)) ? most : undefined;
  }

  /**
   * A selective filter's ask, not held, answered from its matches as the catalogs' store names them
   * (`named`, options.facets): read as holders and held as the filter's learned set at once (as
   * `learn` holds a scan's) when the held sets have room for it, then answered from it like any
   * learned filter; without room, answered from them this once. Undefined (the query goes on as
   * without them) when the store cannot tell, names more than `most` (namedUpTo), or names a
   * product the set holds without a holder (no words), which only a scan would find.
   */
  private async fromNamed(
    tag: string,
    query: IndexQuery,
    groups: string[][],
    share: number,
    named: NamedProducts,
    most: number,
  ): Promise<IndexAnswer | SplitAnswer | undefined> {
    const ahead = await this.queryScripted(tag, { ...query, vector: new Float32Array(0), count: 0, filters: [], lexical: undefined }, 1);
    if (ahead.kind !== "ok" || !ahead.generation) return undefined;
    const ids = await named(groups, most);
    const key = keyOf(tag, groups);
    // Cannot tell (facets still being written, or of `rank`): asked again next time, at no scan's cost.
    if (ids === undefined) return undefined;
    if (ids === "too many" || ids.length > most) {
      this.learning.namedTooMany(key);
      return undefined;
    }
    const matches = await this.readMatches(tag, ahead.generation, ids, query.filters, "not in the set");
    if (!(matches instanceof HeldCandidates)) return undefined;
    const set = { generation: ahead.generation, candidates: matches };
    // Held only if sets asked less often make room for it (candidate-sets.ts): rare filters asked
    // in turn by the thousand, each about as often as the others, are answered from their matches
    // each time, a few hundred reads instead of a scan.
    const held = this.candidateSets.fits(tag, groups, matches.size);
    if (held) {
      this.candidateSets.set(tag, groups, set);
      this.learning.learned(key);
    }
    this.options.onLearning?.(held ? "named" : "named_not_held");
    const answer = await this.queryScripted(tag, query, share, undefined, held ? undefined : set);
    if (answer.kind === "written") {
      if (held) this.learning.lost(key, answer.generation);
      return undefined;
    }
    if (answer.kind === "ok" && held) this.learning.served(key);
    return answer;
  }

  /** The most matches a learned set of a tag holding `share` of its catalog may hold. */
  private learnedMost(share: number): number {
    return Math.floor(Math.min(EXACT_CANDIDATES_HELD * share, (this.options.holderCacheEntries ?? 0) * LEARNED_SHARE_OF_CACHE));
  }

  /** Resolves once the filters being learned and the samples being read now are held (or not): for an orderly close, and tests. */
  async settled(): Promise<void> {
    while (this.learningNow) await this.learningNow;
    await this.filterShares.settled();
  }

  /**
   * Learns a filter's matches without field postings: QUERY_SCRIPT, asked for no nearest elements,
   * reads the build's generation (and when the catalog was written since the filter's last set was
   * lost, nothing more is asked); then the catalogs' store names the filter's products (`named`,
   * one indexed read), or where it cannot tell, one exact scan with the filter on Redis's threads
   * asks for more matches than may be held; every match is read as a holder (its element,
   * attributes and words), when they are few enough and the held sets have room for them; held
   * when all are read (a product without words has no holder). Writes after the generation was read
   * may or may not show in the matches: the set then holds an older generation than the build's,
   * and the next ask is sent those writes from the build's write log and brings it up to date
   * (QUERY_SCRIPT's mode 4), as after any write.
   */
  private async learn(tag: string, query: IndexQuery, groups: string[][], key: string, share: number, named: NamedProducts | undefined): Promise<LearningOutcome | undefined> {
    const most = this.learnedMost(share);
    const ahead = await this.queryScripted(tag, { ...query, vector: new Float32Array(0), count: 0, filters: [], lexical: undefined }, 1);
    // Stale, split, or the build gone: the query's own answer says so.
    if (ahead.kind !== "ok" || !ahead.generation) return undefined;
    // Lost to writes, and written since faster than it can be caught up with: they would take this set too.
    if (this.learning.stillWritten(key, ahead.generation, LEARNED_CATCH_UP)) return "written";
    // Named rather than scanned: at 100k a 2% filter's 2,000 products are a few milliseconds of
    // MySQL where the scan took 40-70 ms of Redis's threads, beside the searches on two cores.
    // Of several groups, "too many" is of each alone: the scan finds how few pass them all.
    const listed = named && this.someGroupFew(tag, query, most) ? await named(groups, most) : undefined;
    const namedIds = listed === "too many" && groups.length > 1 ? undefined : listed;
    const ids = namedIds ?? (await this.scannedMatches(tag, query, most, ahead.generation));
    if (ids === "lost") return "lost";
    const matches = ids === "too many" || ids.length > most ? undefined : ids;
    const held = !matches
      ? "too many"
      : this.candidateSets.fits(tag, groups, matches.length)
        ? await this.readMatches(tag, ahead.generation, matches, query.filters, namedIds ? "not in the set" : "lost")
        : "no room";
    if (held === "vocabulary") return "lost";
    if (held instanceof HeldCandidates) this.candidateSets.set(tag, groups, { generation: ahead.generation, candidates: held });
    // After set: whether a set goes in is weighed by the counts before the ask (candidate-sets.ts).
    this.candidateSets.noteAsked(tag, groups, matches?.length ?? Number.POSITIVE_INFINITY, matches !== undefined);
    if (held === "too many") {
      this.learning.tooMany(key);
      return "too_many";
    }
    if (held instanceof HeldCandidates && this.candidateSets.get(tag, groups)) {
      this.learning.learned(key);
      return "learned";
    }
    this.learning.lost(key);
    return held === "lost" ? "lost" : "no_room";
  }

  /**
   * Whether the catalogs' store may name a learned filter's matches: it reads each group up to one
   * past `most` and narrows by those it read whole, so of several filters one must pass at most
   * `most` products, as far as the tag's sample tells (else MySQL reads `most` + 1 rows a group to
   * say "too many": 12,502 for two 10% filters at 100k, parsed by this process, and the scan follows).
   */
  private someGroupFew(tag: string, query: IndexQuery, most: number): boolean {
    const size = this.facts.size(tag);
    if (query.filters.length === 1 || size === undefined) return true;
    return query.filters.some((filter) => {
      const share = this.filterShares.share(tag, [filter]);
      return share === undefined || share * size <= most;
    });
  }

  /** A filter's matches by an exact scan with it on Redis's threads, up to one past `most`; "lost" when the set was rebuilt since `generation`. */
  private async scannedMatches(tag: string, query: IndexQuery, most: number, generation: string): Promise<readonly string[] | "lost"> {
    const search = { count: most + 1, ef: undefined, filter: { expression: this.filterExpression(tag, query)!, ef: query.count * FILTER_EF_PER_HIT } };
    const nearest = await this.threaded.nearest(this.vectorsKey(tag), this.metaKey(tag), fp32(query.vector), search, { aside: true });
    // Rebuilt since the generation was read: its elements are another build's.
    return nearest.build === generationBuild(generation) ? nearest.ids : "lost";
  }

  /**
   * A learned filter's matches (`ids`, as its scan named them, or the catalogs' store) read as
   * holders, those passing the filters as candidates to hold. "lost" when one is not read: without
   * words (it has no holder), or removed since the scan. Of ids the store named (`unread` "not in the
   * set"), one not read may also not be in the set (not processed yet): it is looked for, and left
   * out if absent.
   */
  private async readMatches(
    tag: string,
    generation: string,
    ids: readonly string[],
    filters: IndexQuery["filters"],
    unread: "lost" | "not in the set" = "lost",
  ): Promise<HeldCandidates | "lost" | "vocabulary"> {
    const read = new Map<string, CachedHolder>();
    for (let from = 0; from < ids.length; from += LEARNED_HOLDERS_PER_CALL) {
      if ((await this.readHolders(tag, generationBuild(generation), ids.slice(from, from + LEARNED_HOLDERS_PER_CALL), read)) === "vocabulary") return "vocabulary";
    }
    const missing = ids.filter((id) => !read.has(id));
    if (missing.length > 0 && (unread === "lost" || (await this.anyInSet(tag, missing)))) return "lost";
    const candidates: Candidate[] = [];
    for (const [productId, holder] of read) {
      // The FILTER expression may pass more than the filters do; and a product written since the
      // scan (the set is then of an older generation, brought up to date at the next ask) is taken as it is now.
      if (matchesFilters(filters, holder.attributes)) candidates.push({ productId, ...holder });
    }
    return new HeldCandidates(candidates);
  }

  /** Whether any of these ids is an element of the tag's set. */
  private async anyInSet(tag: string, ids: readonly string[]): Promise<boolean> {
    const key = this.vectorsKey(tag);
    for (let from = 0; from < ids.length; from += PIPELINE) {
      const pipeline = this.redis.pipeline();
      for (const id of ids.slice(from, from + PIPELINE)) pipeline.call("VISMEMBER", key, id);
      for (const [error, member] of (await pipeline.exec()) ?? []) {
        if (error) throw error;
        if (Number(member) === 1) return true;
      }
    }
    return false;
  }

  /** Whether the tag's build keeps field postings: this process writes them, or a reply said so. */
  private withPostings(tag: string): boolean {
    return this.options.filterPostings === true || this.facts.hasPostings(tag);
  }

  /**
   * HNSW's depth for a query whose filter is pushed down into the walk (filter-shares.ts): SEARCH_EF
   * times the share of the tag's elements that pass (SEARCH_EF while no sample is held), so that the
   * walk explores about as many as an unfiltered one; at least FILTERED_EF_PER_HIT times the count,
   * and `ask` (more with a common word). QUERY_SCRIPT raises it to its own ask alike. Sets of more
   * than SIZED_WALK_MOST elements (or of a size not yet seen) walk at SEARCH_EF.
   */
  private filteredEf(tag: string, query: IndexQuery, ask: number): number {
    if ((this.facts.size(tag) ?? Number.POSITIVE_INFINITY) > SIZED_WALK_MOST) return Math.max(this.options.ef, ask);
    const share = this.filterShares.share(tag, pushedFilters(query.filters));
    return Math.max(ask, FILTERED_EF_PER_HIT * query.count, Math.ceil(this.options.ef * (share ?? 1)));
  }

  /**
   * HNSW's depth for a query with no filter pushed down into its walk: deeper in a large set
   * (hnsw-links.ts), as deep as the elements asked. A query whose filters the postings answer
   * keeps SEARCH_EF, as the walks sized by a filter's share do.
   */
  private unfilteredEf(tag: string, query: IndexQuery, ask: number): number {
    const large = this.largeFor(query);
    const ef = large ? unfilteredEfFor({ ef: this.options.ef, efLarge: large.ef, largeFrom: large.from }, this.facts.size(tag)) : this.options.ef;
    return Math.max(ef, ask);
  }

  /**
   * How the query searches a large set (options.large): not at all without it, nor for a filtered
   * query, whose paths (walks sized by the filter, post-filtered lists, candidates) keep their own depths.
   */
  private largeFor(query: IndexQuery): RedisVectorIndexOptions["large"] {
    return query.filters.length > 0 ? undefined : this.options.large;
  }

  /** The query's pushed-down FILTER for the tag: in its cheaper form on fields its sample holds as strings. */
  private filterExpression(tag: string, query: IndexQuery): string | undefined {
    return query.filters.length === 0 ? undefined : redisFilterExpression(query.filters, this.filterShares.stringFields(tag));
  }

  /** Up to `size` random elements' attributes (FilterShares' sample): their ids (sampledIds), then a VGETATTR each in one pipeline. */
  private async sampleAttributes(tag: string, size: number): Promise<JsonObject[]> {
    const key = this.vectorsKey(tag);
    const ids = await sampledIds(this.redis, key, size);
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.call("VGETATTR", key, id);
    const attributes: JsonObject[] = [];
    for (const [error, json] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      // Removed since the VRANDMEMBER: left out.
      if (typeof json === "string") attributes.push(attributesOf(json));
    }
    return attributes;
  }

  /**
   * Whether the query's VSIM goes on a connection of its own, by the set's size as last seen: an
   * HNSW search, or an exact scan of more than SCAN_ON_THREADS_FROM elements, unfiltered or with
   * filters pushed down into it (no field postings, whose paths the script chooses from what it
   * reads of them).
   */
  private threadable(tag: string, query: IndexQuery, size: number): boolean {
    if (!this.threaded.available || query.count === 0) return false;
    if (query.filters.length > 0 && this.withPostings(tag)) return false;
    return size > query.exactUpTo || size > SCAN_ON_THREADS_FROM;
  }

  /**
   * A query whose nearest elements a VSIM of its own finds (threaded-nearest.ts; HNSW, or an exact
   * scan, with the filters pushed down as QUERY_SCRIPT would), sent after QUERY_SCRIPT asked for
   * none (which checks the build and names the holders of the query's words) in one round trip;
   * then NEAREST_SCRIPT checks the build is still that one, reads the hits' attributes and names the
   * nearest that hold a common word. With copies of what it reads held here (nearest-copies.ts),
   * NEAREST_SCRIPT goes in the VSIM's own pipeline to check the build and name what was written
   * since, and a query whose nearest elements are all held takes that one round trip. The same
   * answer as QUERY_SCRIPT's alone, or undefined when it cannot be told to be (a rebuild since the
   * first call, a common word not known to widen the VSIM, a set now searched the other way,
   * filters on a build with field postings): then the caller asks QUERY_SCRIPT. With the words'
   * holders held as of the copies' generation (held-holders.ts; `useHeld`), QUERY_SCRIPT is not
   * sent ahead, and a check that shows a write since asks the query again without them.
   */
  private async queryThreaded(tag: string, query: IndexQuery, scan: boolean, useHeld = true): Promise<IndexAnswer | SplitAnswer | undefined> {
    const lexical = query.lexical;
    const widened = lexical !== undefined && this.facts.hasCommon(tag, lexical.words);
    const ask = widened ? Math.ceil(query.count * commonWordNearest(this.facts.size(tag) ?? 0, this.largeFor(query)?.from ?? Infinity)) : query.count;
    const filter = this.filterExpression(tag, query);
    const search = {
      count: ask,
      ef: scan ? undefined : filter === undefined ? this.unfilteredEf(tag, query, ask) : this.filteredEf(tag, query, ask),
      filter: filter === undefined ? undefined : { expression: filter, ef: query.count * FILTER_EF_PER_HIT },
    };
    // The build the VSIM is to search: the vocabulary's (QUERY_SCRIPT checks it ahead), else the
    // one copies are held from, which the read ahead of the VSIM must show.
    const held = this.copies.generation(tag);
    const expected = lexical ? lexical.vocabulary.build : this.copies.build(tag);
    const check: ScriptCall | undefined =
      held !== undefined && expected !== undefined ? { command: "vitrineNearest", args: this.nearestArgs(tag, query, expected, held, 0, [], false, []) } : undefined;
    const find = (first?: ScriptCall) => this.threaded.nearest(this.vectorsKey(tag), this.metaKey(tag), fp32(query.vector), search, { first, after: check });
    let nearest: ThreadedNearest | undefined;
    // The words' holders held as of the copies' generation (held-holders.ts): the check after the
    // VSIM tells whether they still are.
    const wordsKey = lexical && this.heldHolders.enabled ? heldHoldersKey(lexical) : undefined;
    const heldWords = wordsKey !== undefined && check && useHeld ? this.heldHolders.get(tag, wordsKey, held!) : undefined;
    // Asked for no nearest elements, the script needs no query vector; without field postings it
    // leaves filters to the caller, holders included.
    const words = lexical && !heldWords
      ? await this.queryScripted(tag, { ...query, vector: new Float32Array(0), count: 0, filters: [] }, 1, async (args) => {
          nearest = await find({ command: "vitrineQueryBuffer", args });
          return nearest.first;
        })
      : undefined;
    if (words?.kind === "written") return undefined;
    if (words && words.kind !== "ok") return words;
    if (wordsKey !== undefined && words?.generation !== undefined && words.holderLines !== undefined) {
      this.heldHolders.set(tag, wordsKey, words.generation, {
        lines: words.holderLines,
        more: words.moreCommonHolders,
        commonWords: words.commonWords ?? [],
      });
    }
    nearest ??= await find();
    const common = heldWords?.commonWords ?? words?.commonWords ?? [];
    if (common.length > 0 && !widened) return undefined;
    // The script ahead of the VSIM (or the holders held in its place) answered only for the build
    // its vocabulary was read from. A rebuild committed after that (or after the read in its place)
    // shows to NEAREST_SCRIPT as another build ("moved"), whether before, during or after the VSIM.
    const build = lexical ? lexical.vocabulary.build : nearest.build!;
    const shown = Math.min(query.count, nearest.ids.length);
    let read: NearestRead | undefined;
    if (check && build === expected) {
      const checked = this.nearestRead(tag, nearest.after as (string | number)[], held, scan, query, 0, 0);
      if (checked.kind !== "read") return checked.answer;
      // The held holders were the build's as of `held` only: after a write, asked afresh.
      if (heldWords && checked.generation !== held) return this.queryThreaded(tag, query, scan, false);
      read = this.fromCopies(tag, nearest.ids, shown, common, checked);
    }
    if (!read) {
      const since = this.copies.generation(tag);
      // With a common word, every nearest element's doc: what tells a later query which hold it.
      const docs = common.length > 0 && this.copies.enabled ? nearest.ids.length : 0;
      const args = this.nearestArgs(tag, query, build, since ?? "", query.count, common, docs > 0, nearest.ids);
      const reply = (await (this.redis as unknown as Scripts).vitrineNearest(...args)) as (string | number)[];
      const checked = this.nearestRead(tag, reply, since, scan, query, shown, docs);
      if (checked.kind !== "read") return checked.answer;
      read = checked;
      for (let k = 0; k < Math.max(shown, docs); k++) {
        this.copies.set(tag, read.generation, nearest.ids[k]!, { attributes: read.attributes[k], doc: read.docs[k] });
      }
    }
    const hits: IndexHit[] = [];
    for (let k = 0; k < shown; k++) hits.push({ productId: nearest.ids[k]!, cosine: 2 * nearest.scores[k]! - 1, attributes: read.attributes[k]! });
    let holders = words?.lexical ?? [];
    if (heldWords) {
      const scored = await this.scoredHolders(tag, lexical!, heldWords.lines);
      if (scored === "vocabulary") return { kind: "vocabulary" };
      holders = scored;
    }
    if (lexical && read.lines !== "") {
      const named = new Set(holders.map((h) => h.productId));
      const more = await this.scoredHolders(tag, lexical, read.lines);
      if (more === "vocabulary") return { kind: "vocabulary" };
      holders = [...holders, ...more.filter((h) => !named.has(h.productId))];
    }
    return {
      kind: "ok",
      size: read.size,
      exact: scan,
      current: read.current && (words?.current ?? true),
      hits,
      lexical: holders,
      moreCommonHolders: words?.moreCommonHolders ?? heldWords?.more ?? false,
    };
  }

  /**
   * A query's reading of its nearest elements from this process's copies (nearest-copies.ts), with
   * what `checked` read of the build: undefined unless every hit's attributes are held, and with
   * common words every nearest element's doc, whose words tell which hold one (as NEAREST_SCRIPT's
   * holdersAmong would).
   */
  private fromCopies(tag: string, ids: readonly string[], shown: number, common: readonly string[], checked: NearestRead): NearestRead | undefined {
    const attributes: JsonObject[] = [];
    const lines: string[] = [];
    const needles = common.map((word) => ` ${word} `);
    for (let k = 0; k < (needles.length > 0 ? ids.length : shown); k++) {
      const copy = this.copies.get(tag, ids[k]!);
      if (k < shown) {
        if (!copy?.attributes) return undefined;
        attributes.push(copy.attributes);
      }
      if (needles.length === 0) continue;
      const doc = copy?.doc;
      if (doc === undefined) return undefined;
      const padded = `${doc} `;
      if (doc !== "" && needles.some((needle) => padded.includes(needle))) lines.push(`${ids[k]} ${docParts(doc).stamp}`);
    }
    return { ...checked, attributes, lines: lines.join("\n"), docs: [] };
  }

  /** NEAREST_SCRIPT's keys and arguments. */
  private nearestArgs(
    tag: string,
    query: IndexQuery,
    build: string,
    held: string,
    hits: number,
    common: readonly string[],
    docs: boolean,
    ids: readonly string[],
  ): string[] {
    return [
      this.vectorsKey(tag),
      this.metaKey(tag),
      this.lexicalPrefix(tag),
      query.expectedVersion,
      query.servableVersionPrefix,
      build,
      String(hits),
      common.join("\n"),
      query.filters.length > 0 ? "1" : "",
      held,
      docs ? "1" : "",
      ...ids,
    ];
  }

  /**
   * What a NEAREST_SCRIPT reply read (its `hits` attributes and `docs` docs, with what was written
   * since `since`, the generation of copies held here when it was sent, applied to those), or its
   * answer: a refusal, or undefined for the caller to ask QUERY_SCRIPT.
   */
  private nearestRead(
    tag: string,
    reply: (string | number)[],
    since: string | undefined,
    scan: boolean,
    query: IndexQuery,
    hits: number,
    docs: number,
  ): NearestRead | { kind: "answered"; answer: IndexAnswer | SplitAnswer | undefined } {
    const refused = refusalOf(reply);
    if (refused) return { kind: "answered", answer: refused };
    if (String(reply[0]) === "moved") return { kind: "answered", answer: undefined };
    if (String(reply[0]) === "postings") {
      this.facts.notePostings(tag);
      return { kind: "answered", answer: undefined };
    }
    const size = Number(reply[1]);
    // Its common words were learned from the script's answer.
    this.facts.learn(tag, size, []);
    const generation = String(reply[3]);
    const written = String(reply[4]);
    if (generation !== "") {
      this.copies.advance(tag, since, generation, written === "*" ? undefined : written === "" ? [] : written.split("\n"));
      this.heldHolders.observe(tag, generation);
    }
    // The script would now search the set the other way (HNSW or a scan).
    if ((size <= query.exactUpTo) !== scan) return { kind: "answered", answer: undefined };
    const attributes: JsonObject[] = [];
    for (let k = 0; k < hits; k++) attributes.push(attributesOf(String(reply[5 + k])));
    const docList = Array.from({ length: docs }, (_, k) => String(reply[6 + hits + k]));
    return { kind: "read", size, current: Number(reply[2]) === 1, generation, attributes, lines: String(reply[5 + hits]), docs: docList };
  }
  /**
   * One QUERY_SCRIPT call (`send` runs it: on the main connection, or ahead of a threaded VSIM); an
   * answer of HNSW or a scan names the query's common words too.
   */
  private async queryScripted(
    tag: string,
    query: IndexQuery,
    share = 1,
    send: (args: (string | Buffer)[]) => Promise<unknown> = (args) => (this.redis as unknown as Scripts).vitrineQueryBuffer(...args),
    /** A filter's candidates this query is answered from as if held, though they are not (fromNamed). */
    transient?: CandidateSet,
  ): Promise<ScriptedAnswer> {
    const filter = this.filterExpression(tag, query) ?? "";
    const exactUpTo = Number.isFinite(query.exactUpTo) ? String(query.exactUpTo) : String(Number.MAX_SAFE_INTEGER);
    const groups = filterFacetGroups(query.filters);
    // Without field postings a filter, when one is pushed down, is in the script's only HNSW walk;
    // with them the script may instead ask plain HNSW, deep enough that enough pass.
    const pushed = filter !== "" && !this.withPostings(tag);
    const ef = pushed ? this.filteredEf(tag, query, query.count) : this.unfilteredEf(tag, query, query.count);
    const lexical = query.lexical;
    // Every filter eq/in: the postings decide them all (their estimate holds for all of them, and
    // a candidate needs no check).
    const decided = groups.length === query.filters.length;
    // Kept from here: a query between this call and its reply may drop it from the sets.
    const held = transient ?? this.candidateSets.get(tag, groups);
    // A filter whose set would be kept (candidate-sets.ts): its candidates named by stamp (to be
    // read once, then held), and up to EXACT_CANDIDATES_HELD of them. Else read whole, up to
    // EXACT_CANDIDATES, and not kept.
    const holding = held !== undefined || this.candidateSets.admits(tag, groups);
    // Buffers: holders' element blobs are binary.
    const reply = (await send([
      this.vectorsKey(tag),
      this.metaKey(tag),
      this.lexicalPrefix(tag),
      query.expectedVersion,
      exactUpTo,
      fp32(query.vector),
      String(query.count),
      String(ef),
      filter,
      String(query.count * FILTER_EF_PER_HIT),
      query.servableVersionPrefix,
      String(Math.floor(EXACT_CANDIDATES * share)),
      String(groups.length),
      String(decided ? Math.floor(MAX_POSTFILTER_COUNT * share) : 0),
      holding ? "1" : "0",
      String(Math.floor(EXACT_CANDIDATES_HELD * share)),
      held?.generation ?? "",
      String(Math.floor(VALUE_SET_SCAN_MOST * share)),
      ...groups.flatMap((g) => [String(g.length), ...g]),
      ...(lexical
        ? [
            lexical.vocabulary.build,
            String(lexical.vocabulary.size),
            String(lexical.maxProducts),
            String(lexical.commonWordProducts),
            String(lexical.commonProducts),
            // "" (none): every set widens as a small one.
            String(this.largeFor(query)?.from ?? ""),
            ...lexical.words,
          ]
        : [""]),
    ])) as (Buffer | number)[];
    const refused = refusalOf(reply);
    if (refused) return refused;
    if (String(reply[0]) === "vocabulary") return { kind: "vocabulary" };
    if (String(reply[0]) === "written") {
      this.candidateSets.delete(tag, groups);
      return { kind: "written", generation: String(reply[1] ?? "") };
    }
    const mode = Number(reply[2]);
    const size = Number(reply[1]);
    const current = Number(reply[4]) === 1;
    if (mode === 2 && !holding) {
      const whole = await this.readWhole(tag, String(reply[6]), String(reply[5]));
      if (whole === "vocabulary") return { kind: "vocabulary" };
      this.candidateSets.noteAsked(tag, groups, whole.ids.length, true);
      return { kind: "ok", size, exact: true, current, moreCommonHolders: false, ...scoreWhole(whole, query, decided) };
    }
    if (mode === 2 || mode === 3 || mode === 4) {
      const candidates = mode === 2 ? await this.readCandidates(tag, reply) : held!.candidates;
      if (candidates === "vocabulary") return { kind: "vocabulary" };
      // Without postings the script sends every product written since, passing or not: the set
      // keeps those its groups' filters (eq/in) pass, whatever else the query asks. With postings
      // it sends those they pass.
      if (mode === 4) {
        const grouped = query.filters.filter((f) => f.operator === "eq" || f.operator === "in");
        candidates.update(String(reply[5]).split("\n"), wholeCandidates(reply).filter((c) => matchesFilters(grouped, c.attributes)));
      }
      // Brought up to date, a set may have grown past what a query reads when it is not held: it
      // is then scored this once and named anew next time, which chooses its path again.
      if (mode === 4 && candidates.size > Math.floor(EXACT_CANDIDATES_HELD * share)) this.candidateSets.delete(tag, groups);
      else if (mode !== 3) this.candidateSets.set(tag, groups, { generation: String(reply[6]), candidates });
      this.candidateSets.noteAsked(tag, groups, candidates.size, true);
      return { kind: "ok", size, exact: true, current, moreCommonHolders: false, ...candidates.score(query, decided) };
    }
    // Not scored, but noted with the candidates holding it would hold: the room its set would
    // take is what its admission weighs. One group's is counted (its postings' sizes: never fewer
    // than its candidates, more only for an in over an array field), several groups' a sample's guess.
    if (groups.length > 0) this.candidateSets.noteAsked(tag, groups, heldSizeOf(String(reply[5])), groups.length === 1);
    const hits: IndexHit[] = [];
    let i = 7;
    for (const end = i + 3 * Number(reply[3]); i < end; i += 3) {
      const productId = String(reply[i]);
      const attributes = String(reply[i + 2]);
      const cosine = 2 * Number(String(reply[i + 1])) - 1;
      hits.push(attributes === "!" ? { productId, cosine, attributes: {}, failsFilters: true } : { productId, cosine, attributes: attributesOf(attributes) });
    }
    const holderLines = lexical && i + 1 < reply.length ? String(reply[i + 1]) : undefined;
    const holders = holderLines !== undefined ? await this.scoredHolders(tag, lexical!, holderLines) : [];
    if (holders === "vocabulary") return { kind: "vocabulary" };
    const moreCommonHolders = lexical !== undefined && Number(reply[i]) === 1;
    const commonWords = lexical && i + 2 < reply.length && String(reply[i + 2]) !== "" ? String(reply[i + 2]).split("\n") : [];
    this.facts.learn(tag, size, commonWords);
    const generation = String(reply[6]);
    return {
      kind: "ok",
      size,
      exact: mode !== 0,
      current,
      hits,
      lexical: holders,
      moreCommonHolders,
      commonWords,
      ...(generation === "" ? {} : { generation }),
      ...(holderLines === undefined ? {} : { holderLines }),
    };
  }

  /**
   * A filter's candidates not to be held (mode 2), named by id in the reply and read whole here
   * (readCopies). Their build (`generation`'s) must still be the tag's with its copies, else its
   * keys may be gone: the caller then asks again ("vocabulary").
   */
  private async readWhole(tag: string, generation: string, idLines: string): Promise<WholeRead | "vocabulary"> {
    const ids = idLines === "" ? [] : idLines.split("\n");
    if (ids.length === 0) return { ids, elements: [], attributes: [], docs: [] };
    return (await this.readCopies(tag, generationBuild(generation), ids)) ?? "vocabulary";
  }

  /**
   * Products whole from a build with field postings, which keeps every element and its attributes
   * in hashes beside its words: plain HMGETs in one transaction, which Redis answers without the
   * conversions into Lua and back that a script returning them costs (at 100k, 1,000 candidates:
   * 4.4 ms of its main thread a query against 6.0-7.3, docs/filtered-search-measurements.md,
   * session 42). "vocabulary" when `build` is no longer the tag's; undefined when it keeps no copies.
   */
  private async readCopies(tag: string, build: string, ids: readonly string[]): Promise<WholeRead | "vocabulary" | undefined> {
    const base = `${this.lexicalPrefix(tag)}${build}:`;
    const results = await this.redis
      .multi()
      .hmget(this.metaKey(tag), "lex", "facets")
      .hmgetBuffer(`${base}vec`, ...ids)
      .hmget(`${base}attr`, ...ids)
      .hmget(`${base}docs`, ...ids)
      .exec();
    check(results);
    const [meta, elements, attributes, docs] = results!.map(([, value]) => value) as [(string | null)[], (Buffer | null)[], (string | null)[], (string | null)[]];
    if (meta[0] !== build) return "vocabulary";
    return meta[1] === build ? { ids, elements, attributes, docs } : undefined;
  }

  /**
   * A filter's candidates to be held (mode 2): those named by stamp from the holder cache, those it
   * lacks read in one more call, those without a stamp (no words) whole from the reply.
   */
  private async readCandidates(tag: string, reply: (Buffer | number)[]): Promise<HeldCandidates | "vocabulary"> {
    const candidates = wholeCandidates(reply);
    const stamped = stampLines(String(reply[5]));
    // Taken before the read, whose entries may push these out of the cache.
    const cached = stamped.map((c) => this.holders.get(tag, c.productId, c.stamp));
    const missing = stamped.filter((_, k) => !cached[k]).map((c) => c.productId);
    const read = new Map<string, CachedHolder>();
    // The build named them: another one since, and the query is asked again.
    if (missing.length > 0 && (await this.readHolders(tag, generationBuild(String(reply[6])), missing, read)) === "vocabulary") return "vocabulary";
    stamped.forEach((c, k) => {
      // Gone since the query (removed): not a candidate. Read anew: as it is now, whatever its stamp.
      const holder = cached[k] ?? read.get(c.productId);
      if (holder) candidates.push({ productId: c.productId, ...holder });
    });
    return new HeldCandidates(candidates);
  }

  /**
   * The holders of the query's words ("<id> <stamp>" lines) with their dot products: from this
   * process's cache where the stamp matches, the rest read in one more call.
   */
  private async scoredHolders(tag: string, lexical: NonNullable<IndexQuery["lexical"]>, lines: string): Promise<LexicalHit[] | "vocabulary"> {
    const scored: LexicalHit[] = [];
    const missing: string[] = [];
    const score = (productId: string, holder: CachedHolder) =>
      scored.push({ productId, dots: partDots(holder.element, lexical.visual, lexical.text), attributes: holder.attributes, words: holder.words });
    for (const { productId, stamp } of stampLines(lines)) {
      const holder = this.holders.get(tag, productId, stamp);
      if (holder) score(productId, holder);
      else missing.push(productId);
    }
    if (missing.length === 0) return scored;
    const fresh = new Map<string, CachedHolder>();
    if ((await this.readHolders(tag, lexical.vocabulary.build, missing, fresh)) === "vocabulary") return "vocabulary";
    for (const [productId, holder] of fresh) score(productId, holder);
    return scored;
  }

  /**
   * Reads products whole into `into` and the cache: from a build with copies by readCopies, else
   * by HOLDERS_SCRIPT, which reads each element and its attributes from the vector set.
   */
  private async readHolders(tag: string, build: string, productIds: readonly string[], into: Map<string, CachedHolder>): Promise<"vocabulary" | undefined> {
    const hold = (productId: string, holder: CachedHolder) => {
      this.holders.set(tag, productId, holder);
      into.set(productId, holder);
    };
    const slabs = new VectorSlabs();
    if (this.options.filterPostings) {
      const copies = await this.readCopies(tag, build, productIds);
      if (copies === "vocabulary") return "vocabulary";
      if (copies) {
        copies.ids.forEach((productId, k) => {
          const [element, doc] = [copies.elements[k], copies.docs[k]];
          // No words (so no doc) or no element: removed since it was named.
          if (!element || !doc) return;
          const { stamp, words } = docParts(doc);
          hold(productId, { stamp, element: slabs.copy(element), attributes: attributesOf(copies.attributes[k] ?? ""), words: wordsOf(words) });
        });
        return undefined;
      }
    }
    const reply = (await (this.redis as unknown as Scripts).vitrineHoldersBuffer(this.vectorsKey(tag), this.metaKey(tag), this.lexicalPrefix(tag), build, ...productIds)) as Buffer[];
    if (String(reply[0]) === "vocabulary") return "vocabulary";
    for (let i = 1; i < reply.length; i += 5) {
      hold(String(reply[i]), {
        stamp: String(reply[i + 1]),
        element: slabs.copy(reply[i + 2]!),
        attributes: attributesOf(String(reply[i + 3])),
        words: wordsOf(String(reply[i + 4])),
      });
    }
    return undefined;
  }

  async vocabulary(tag: string, known: { build: string; size: number } | undefined): Promise<VocabularyRead> {
    const reply = (await (this.redis as unknown as Scripts).vitrineVocabulary(
      this.metaKey(tag),
      this.lexicalPrefix(tag),
      known?.build ?? "",
      String(known?.size ?? 0),
    )) as string[];
    return { build: reply[0] === "" ? undefined : reply[0], whole: Number(reply[1]) === 1, words: reply.slice(2).map(String) };
  }

  async upsert(tag: string, entries: readonly IndexEntry[]): Promise<void> {
    await this.add(tag, this.vectorsKey(tag), "", entries, undefined);
  }

  async remove(tag: string, productIds: readonly string[]): Promise<void> {
    const key = this.vectorsKey(tag);
    for (let start = 0; start < productIds.length; start += PIPELINE) {
      const pipeline = this.redis.pipeline() as unknown as PipelineScripts;
      this.stopUsingPostingsIfOff(pipeline, tag);
      for (const id of productIds.slice(start, start + PIPELINE)) {
        // Words first: a product with words always has its element, so a holder's stamp never
        // stands for a removed element (holder-cache.ts). With postings: "" for the element takes
        // the product out of them too.
        pipeline.vitrineLexicalPut(this.metaKey(tag), this.lexicalPrefix(tag), "", id, "", "", ...(this.options.filterPostings ? ["", ""] : []));
        pipeline.call("VREM", key, id);
      }
      check(await pipeline.exec());
    }
  }

  async rebuild(tag: string, version: string, pages: AsyncIterable<readonly IndexEntry[]>, m?: number): Promise<number> {
    const build = await this.beginBuild(tag, m);
    let count = 0;
    for await (const page of pages) {
      await build.add(page);
      count += page.length;
    }
    await build.commit(version, count);
    return count;
  }

  /** A build aside, with HNSW's `m` for its life (fixed: its sets are made with it, and every later write must repeat it). */
  async beginBuild(tag: string, m = DEFAULT_HNSW_M): Promise<SlotBuild> {
    // Built aside and switched to at once: readers see the old set and words until the new ones are
    // whole. The lexical keys of a new build id need no renaming; the meta hash names the build.
    const building = this.buildingKey(tag);
    // 'h': its words' holders are kept with their stamps (lexical-script.ts).
    const build = `h${randomBytes(6).toString("hex")}`;
    await this.redis.del(building);
    // Named before its first key: whichever build is committed next unlinks this one's keys by name
    // (dropBuilds), also when this one is never committed.
    await this.redis.sadd(this.buildsKey(tag), build);
    // Before the first product: every write to the build, by any process, keeps these fields' value
    // sets (lexical-script.ts), whatever that process was configured with.
    const valueSetFields = this.options.filterPostings ? (this.options.valueSetFields ?? []) : [];
    if (valueSetFields.length > 0) await this.redis.set(`${this.lexicalPrefix(tag)}${build}:valuesets`, valueSetFields.map(tokenHead).join("\n"));
    return {
      add: (entries) => this.add(tag, building, build, entries, m),
      commit: async (version, count) => {
        // Builds from before the builds set was kept are named only here.
        const previous = await this.redis.hget(this.metaKey(tag), "lex");
        const commit = this.redis.multi();
        if (count > 0) commit.rename(building, this.vectorsKey(tag));
        else commit.del(this.vectorsKey(tag), building);
        // facets: this build holds field postings for every element (builds before them do not, and
        // their queries never take the postings path). parts: the tag holds a set again. m: what
        // upserts pass to this build's sets, whatever M their process was configured with.
        const meta = { version, lex: build, builtAt: new Date().toISOString(), size: String(count), m: String(m) };
        if (this.options.filterPostings) commit.hset(this.metaKey(tag), { ...meta, facets: build }).hdel(this.metaKey(tag), "parts");
        else commit.hset(this.metaKey(tag), meta).hdel(this.metaKey(tag), "facets", "parts");
        check(await commit.exec());
        await this.dropBuilds(tag, build, previous);
      },
    };
  }

  /**
   * Makes the tag a split catalog's home: its meta names the layout (the parts are already
   * committed), and its own set and words go, in one step for readers.
   */
  async commitSplit(tag: string, version: string, layout: string, count: number): Promise<void> {
    const meta = { version, parts: layout, builtAt: new Date().toISOString(), size: String(count) };
    // Its current build named in the builds set first: the meta stops naming it below, and the set
    // keeps its name until its keys are gone, whatever stops the unlinking halfway.
    const previous = await this.redis.hget(this.metaKey(tag), "lex");
    if (previous) await this.redis.sadd(this.buildsKey(tag), previous);
    check(
      await this.redis
        .multi()
        .del(this.vectorsKey(tag), this.buildingKey(tag))
        .hset(this.metaKey(tag), meta)
        .hdel(this.metaKey(tag), "lex", "facets", "m")
        .exec(),
    );
    await this.dropBuilds(tag, undefined, null);
  }

  /** The split layout the tag's meta names ("<generation>.<parts>"); undefined when it holds a set. */
  async layout(tag: string): Promise<string | undefined> {
    return (await this.redis.hget(this.metaKey(tag), "parts")) ?? undefined;
  }

  async version(tag: string): Promise<string | undefined> {
    return (await this.redis.hget(this.metaKey(tag), "version")) ?? undefined;
  }

  async element(tag: string, productId: string): Promise<Float32Array | undefined> {
    // NOQUANT: VEMB gives back the float32 components times the stored norm.
    const reply = (await this.redis.call("VEMB", this.vectorsKey(tag), productId)) as string[] | null;
    return reply ? Float32Array.from(reply, Number) : undefined;
  }

  /**
   * Everything the tag holds, by name, in proportion to what it holds: its set, then every build
   * its builds set or meta names, then the keys that name them (a drop stopped halfway is finished
   * by the next one).
   */
  async drop(tag: string): Promise<void> {
    // The meta goes with the set, in one step: a reader then finds the tag gone (no version, which a
    // split catalog's reader takes for parts replaced), never a version over an emptied set, which
    // it would take for an empty part and answer without that part's products. Its build stays
    // named in the builds set until its keys are unlinked.
    const previous = await this.redis.hget(this.metaKey(tag), "lex");
    if (previous) await this.redis.sadd(this.buildsKey(tag), previous);
    await this.redis.del(this.metaKey(tag), this.vectorsKey(tag), this.buildingKey(tag));
    await this.dropBuilds(tag, undefined, null);
    await this.redis.del(this.buildsKey(tag), this.splitsKey(tag));
  }

  /**
   * Every key of the tags starting with `prefix` that `owns` accepts, in one scan of every key:
   * what no name leads to (builds and splits abandoned before they were named, a crash's
   * leftovers), for the orphan sweep's drop, never a delete's.
   */
  async unlinkEveryKeyOf(prefix: string, owns: (tag: string) => boolean): Promise<void> {
    await this.scanKeys(`${escapeGlob(this.options.keyPrefix)}{${escapeGlob(prefix)}*`, async (node, keys) => {
      // One UNLINK takes one slot's keys, on a cluster: a hash tag's.
      const byTag = new Map<string, string[]>();
      for (const key of keys) {
        const tag = this.tagOfKey(key);
        if (!owns(tag)) continue;
        const same = byTag.get(tag);
        if (same) same.push(key);
        else byTag.set(tag, [key]);
      }
      for (const doomed of byTag.values()) await node.unlink(...doomed);
    });
  }

  /** Names a split layout of the catalog at `tag` before its parts get their first key, for dropping it by name. */
  async noteSplit(tag: string, layout: string): Promise<void> {
    await this.redis.sadd(this.splitsKey(tag), layout);
  }

  /** The split layouts noted for the catalog at `tag` and not yet forgotten. */
  async splits(tag: string): Promise<string[]> {
    return this.redis.smembers(this.splitsKey(tag));
  }

  /** Once a layout's parts are dropped. */
  async forgetSplit(tag: string, layout: string): Promise<void> {
    await this.redis.srem(this.splitsKey(tag), layout);
  }

  /**
   * Unlinks the keys of the tag's builds but `keep`: those begun (the builds set) and `previous`,
   * each from its own lists, so a rebuild or a drop costs Redis in proportion to the catalog, not
   * to every key it holds (a SCAN of the keyspace did: 1-2 us of its main thread a key of every
   * catalog, bench/keyspace.ts). A build is named in the set until its keys are gone.
   */
  private async dropBuilds(tag: string, keep: string | undefined, previous: string | null): Promise<void> {
    const builds = new Set(await this.redis.smembers(this.buildsKey(tag)));
    if (previous) builds.add(previous);
    if (keep !== undefined) builds.delete(keep);
    for (const build of builds) {
      await this.unlinkBuild(tag, build);
      await this.redis.srem(this.buildsKey(tag), build);
    }
  }

  /**
   * One build's keys (lexical-script.ts's layout): its words' holder hashes and ranked sets, named
   * by its append-only vocabulary; its postings and value sets, named by the tokens its products
   * hold now (a posting or value set left empty is gone already); then its own hashes and lists.
   */
  private async unlinkBuild(tag: string, build: string): Promise<void> {
    const base = `${this.lexicalPrefix(tag)}${build}:`;
    for (let from = 0; ; from += UNLINK_BATCH) {
      const words = await this.redis.lrange(`${base}vocab`, from, from + UNLINK_BATCH - 1);
      if (words.length > 0) await this.redis.unlink(...words.flatMap((word) => [`${base}w:${word}`, `${base}r:${word}`]));
      if (words.length < UNLINK_BATCH) break;
    }
    let cursor = "0";
    do {
      const [next, entries] = await this.redis.hscan(`${base}fdocs`, cursor, "COUNT", UNLINK_BATCH);
      cursor = next;
      const tokens = new Set<string>();
      for (let i = 1; i < entries.length; i += 2) for (const token of entries[i]!.split("\n")) tokens.add(token);
      if (tokens.size > 0) await this.redis.unlink(...[...tokens].flatMap((token) => [`${base}f:${token}`, `${base}fv:${token}`]));
    } while (cursor !== "0");
    await this.redis.unlink(...BUILD_KEYS.map((name) => `${base}${name}`));
  }

  /** Tags that hold anything (a scan of every key); `signal` stops the scan between pages. */
  async tags(signal?: AbortSignal): Promise<string[]> {
    const tags = new Set<string>();
    await this.scanKeys(`${escapeGlob(this.options.keyPrefix)}{*}:*`, (_, keys) => {
      for (const key of keys) tags.add(this.tagOfKey(key));
    }, signal);
    return [...tags];
  }

  /** Claims `name` for the next `ms` among every process sharing this Redis: false when another holds it. */
  async claim(name: string, ms: number): Promise<boolean> {
    return (await this.redis.set(`${this.options.keyPrefix}claim:${name}`, `${process.pid}`, "PX", ms, "NX")) === "OK";
  }

  /** The tag's vector set's own memory use, in bytes. */
  async memoryUsage(tag: string): Promise<number> {
    return Number((await this.redis.call("MEMORY", "USAGE", this.vectorsKey(tag))) ?? 0);
  }

  /**
   * Writes entries' vectors into `key` and their words into the lexical build ("" = the current
   * one), with HNSW's `m` of that build; undefined: the current build's, as its meta records it.
   */
  private async add(tag: string, key: string, build: string, entries: readonly IndexEntry[], m: number | undefined): Promise<void> {
    if (entries.length === 0) return;
    // Read once, as the split layout is (vector-index.ts): a catalog's writes and rebuilds take
    // turns (index-sync.ts holds its lock for each), so no rebuild switches the set meanwhile.
    const buildM = m ?? (await this.currentM(tag));
    for (let start = 0; start < entries.length; start += PIPELINE) {
      await this.addPage(tag, key, build, entries.slice(start, start + PIPELINE), buildM);
    }
  }

  /** The HNSW M of the tag's current build: what its meta records, else Redis's default. */
  private async currentM(tag: string): Promise<number> {
    const recorded = await this.redis.hget(this.metaKey(tag), "m");
    return recorded === null ? DEFAULT_HNSW_M : Number(recorded);
  }

  /** One pipeline of writes (at most PIPELINE entries), then their value sets'. */
  private async addPage(tag: string, key: string, build: string, entries: readonly IndexEntry[], m: number): Promise<void> {
    const M = String(m);
    const pipeline = this.redis.pipeline() as unknown as PipelineScripts;
    if (build === "") this.stopUsingPostingsIfOff(pipeline, tag);
    const puts: ElementPut[] = [];
    for (const e of entries) {
      // NOQUANT: float32 elements keep scores exact (see README: search); every VADD must repeat it,
      // and M, the set's (Redis refuses any other, and taking its default for a missing one).
      // CAS: the neighbour search of an insert runs on Redis's threads, not its main one. Without
      // it a pipeline of inserts held queries up: VSIM p50 79 ms / p99 382 ms during a bulk load,
      // against 3 / 37 ms with it (`npx tsx bench/vadd.ts`). The build EF stays Redis's 200:
      // 100 halved an insert's CPU but took `npm run bench:search`'s recall@10 at 100k from 0.973
      // to 0.940.
      const [blob, attributes] = [fp32(e.vector), redisAttributesJson(e.attributes)];
      pipeline.call("VADD", key, "FP32", blob, e.productId, "CAS", "NOQUANT", "M", M, "SETATTR", attributes);
      const words = e.words.join(" ");
      // After the VADD: a query that reads the new stamp finds the new element. The stamp leads
      // with the product's place among a common word's holders (lexical-script.ts).
      const stamp = `${holderOrder(e.attributes.rank, e.words.length)}.${this.nextStamp()}`;
      if (this.options.filterPostings) {
        // Stored unit length, as VEMB RAW gives it back: the candidates' scores are then exact cosines.
        const unit = fp32(unitLength(e.vector));
        puts.push({ reply: pipeline.length, productId: e.productId, element: unit, attributes });
        pipeline.vitrineLexicalPut(this.metaKey(tag), this.lexicalPrefix(tag), build, e.productId, stamp, words, unit, attributes, ...attributeFacets(e.attributes));
      } else {
        // Words only: the script leaves postings alone (a build written with them stops being
        // used for them, see stopUsingPostingsIfOff), so writes pay nothing for them.
        pipeline.vitrineLexicalPut(this.metaKey(tag), this.lexicalPrefix(tag), build, e.productId, stamp, words);
      }
    }
    const results = await pipeline.exec();
    check(results);
    await this.writeValueSets(puts, results!, M);
  }

  /**
   * Writes elements into the value sets the postings script named (lexical-script.ts), with CAS, so
   * their neighbour search runs on Redis's threads. A product written twice in one pipeline goes
   * only where its last write put it: the earlier write's sets were left by the later script.
   */
  private async writeValueSets(puts: readonly ElementPut[], results: [Error | null, unknown][], m: string): Promise<void> {
    const last = new Map<string, { put: ElementPut; keys: string[] }>();
    for (const put of puts) {
      const reply = results[put.reply]![1];
      if (Array.isArray(reply)) last.set(put.productId, { put, keys: reply.map(String) });
      else last.delete(put.productId);
    }
    if (last.size === 0) return;
    const pipeline = this.redis.pipeline() as unknown as PipelineScripts;
    for (const [id, { put, keys }] of last) {
      for (const key of keys) pipeline.call("VADD", key, "FP32", put.element, id, "CAS", "NOQUANT", "M", m, "SETATTR", put.attributes);
    }
    check(await pipeline.exec());
  }

  /**
   * Postings turned off over a build written with them: this write does not maintain them, so
   * queries must stop using them (the meta hash's `facets` mark), in the same pipeline, before it.
   */
  private stopUsingPostingsIfOff(pipeline: PipelineScripts, tag: string): void {
    if (!this.options.filterPostings) pipeline.call("HDEL", this.metaKey(tag), "facets");
  }

  /** Each page of the keys matching a glob pattern, on every master; `signal` stops between pages. */
  private async scanKeys(pattern: string, page: (node: Redis, keys: string[]) => Promise<void> | void, signal?: AbortSignal): Promise<void> {
    await forEachPrimary(this.redis, async (node) => {
      let cursor = "0";
      do {
        signal?.throwIfAborted();
        const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        await page(node, keys);
      } while (cursor !== "0");
    });
  }

  /** The hash tag a key of this index is under, without its braces. */
  private tagOfKey(key: string): string {
    const at = this.options.keyPrefix.length + 1;
    return key.slice(at, key.indexOf("}", at));
  }

  private nextStamp(): string {
    return this.stampPrefix + (this.stamps++).toString(36);
  }

  private lexicalPrefix(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:lex:`;
  }

  private vectorsKey(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:vectors`;
  }

  private metaKey(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:meta`;
  }

  private buildingKey(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:building`;
  }

  /** The tag's builds begun and not yet unlinked. */
  private buildsKey(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:builds`;
  }

  /** A catalog's split layouts begun and not yet dropped (its parts live under tags of their own). */
  private splitsKey(tag: string): string {
    return `${this.options.keyPrefix}{${tag}}:splits`;
  }
}

/** A product's element as the postings script was given it, and where that script's reply will be. */
interface ElementPut {
  reply: number;
  productId: string;
  element: Buffer;
  attributes: string;
}

interface Scripts {
  vitrineQueryBuffer(...args: (string | Buffer)[]): Promise<unknown>;
  vitrineHoldersBuffer(...args: string[]): Promise<unknown>;
  vitrineVocabulary(...args: string[]): Promise<unknown>;
  vitrineNearest(...args: string[]): Promise<unknown>;
}

/** What NEAREST_SCRIPT read of a query's hits (or, from this process's copies, what it would have). */
interface NearestRead {
  kind: "read";
  size: number;
  current: boolean;
  /** The build's generation it read them as of. */
  generation: string;
  attributes: JsonObject[];
  /** The nearest holding a common word, as "<id> <stamp>" lines. */
  lines: string;
  /** The nearest elements' docs, when asked for ("" for none). */
  docs: string[];
}

interface PipelineScripts {
  /** Commands queued so far: the index of the next one's reply. */
  readonly length: number;
  call(...args: (string | Buffer)[]): unknown;
  vitrineLexicalPut(...args: (string | Buffer)[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The candidates a mode-2 or mode-4 reply sends whole: (id, element, attributes, words) from 7 on. */
function wholeCandidates(reply: (Buffer | number)[]): Candidate[] {
  const candidates: Candidate[] = [];
  const slabs = new VectorSlabs();
  for (let i = 7, end = i + 4 * Number(reply[3]); i < end; i += 4) {
    candidates.push({ productId: String(reply[i]), element: slabs.copy(reply[i + 1] as Buffer), attributes: attributesOf(String(reply[i + 2])), words: wordsOf(String(reply[i + 3])) });
  }
  return candidates;
}

/** Candidates read whole (readWhole), side by side; null where a product was removed since it was named. */
interface WholeRead {
  ids: readonly string[];
  elements: (Buffer | null)[];
  attributes: (string | null)[];
  /** "#<stamp> <words>" (lexical-script.ts). */
  docs: (string | null)[];
}

/**
 * Candidates read whole and not to be held, scored as they come: one scratch element, and
 * attributes parsed only for those kept or holding a word of the query, since thousands are read
 * for a few dozen hits. Written since they were named, a candidate may fail the filters now: the
 * searcher checks every hit's attributes.
 */
function scoreWhole(read: WholeRead, query: IndexQuery, decided: boolean): CandidateResult {
  const scores = new CandidateScores(query);
  let element: Float32Array = new Float32Array(0);
  for (let k = 0; k < read.ids.length; k++) {
    const blob = read.elements[k];
    if (!blob) continue;
    const json = read.attributes[k] ?? "";
    const attributes = decided ? json : attributesOf(json);
    if (typeof attributes !== "string" && !matchesFilters(query.filters, attributes)) continue;
    element = bytesToVector(blob, element);
    scores.add(read.ids[k]!, element, attributes, docWords(read.docs[k] ?? ""));
  }
  return scores.result();
}

function unitLength(vector: Float32Array): Float32Array {
  const length = Math.hypot(...vector);
  return length === 0 || Math.abs(length - 1) < 1e-7 ? vector : vector.map((x) => x / length);
}


/** A query script's reply that the tag is split or its index stale (both scripts answer so alike). */
function refusalOf(reply: readonly unknown[]): SplitAnswer | { kind: "stale"; version: string | undefined } | undefined {
  const kind = String(reply[0]);
  if (kind === "split") return { kind: "split", layout: String(reply[1]) };
  if (kind === "stale") return { kind: "stale", version: String(reply[1]) === "" ? undefined : String(reply[1]) };
  return undefined;
}

function check(results: [Error | null, unknown][] | null): void {
  for (const [error] of results ?? []) if (error) throw error;
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}
