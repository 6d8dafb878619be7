// The lexical half of the text similarity: how well the words a shopper typed match the words of a
// product's descriptor, letter for letter. Defined exactly (README: "Search and recommendations"):
//
//   match(q, d) = 1              d == q
//               = 1 - 0.2 * k    d within k edits (Levenshtein) of q: k <= 1 from 4 letters, k <= 2 from 8
//               = (1 + |q|/|d|)/2 q is the query's last word, has 3+ letters and is a prefix of d
//   lexical     = 1              the product's words are the query's, in the same order (exact)
//               = 0.8 * (0.9 * mean over query words q of (best match(q, d) over the product's words d)
//                        + 0.1 * (product words matched by some query word) / (product words))
//
// lexical lies in (0, 1] for a product that holds a matched word, and is NO_LEXICAL_MATCH (-1, the
// floor of a cosine) for every other product. The text similarity is max(0.8 * semantic cosine,
// lexical): everything but an exact match is scaled by INEXACT_SCALE, so the product whose descriptor was typed whole stands clear of its
// near-duplicates (same words but one colour, one word more), whose semantic cosines are 0.95-0.99.
// Fuzzy and prefix lookups over the catalog's vocabulary are minisearch's radix tree
// (SearchableMap.fuzzyGet / atPrefix).
import SearchableMap from "minisearch/SearchableMap";
import { tokenize } from "../embeddings/tokenize.js";

export const LEXICAL_LIMITS = {
  /** Query words beyond this many are not matched lexically (their meaning still counts). */
  maxQueryWords: 16,
  /** Longer words are cut to this many characters, in descriptors and queries alike. */
  maxWordLength: 40,
  /** The last query word matches as a prefix from this many letters. */
  prefixFrom: 3,
  /** A prefix stands for at most this many catalog words: the shortest, then alphabetically first. */
  maxPrefixWords: 64,
  /** Words of this many letters match within one edit, */
  oneEditFrom: 4,
  /** and within two from this many. */
  twoEditsFrom: 8,
} as const;

export const NO_LEXICAL_MATCH = -1;

/**
 * Text similarity below an exact match is scaled by this, semantic and lexical alike: an exact
 * match is 1, anything else at most 0.8. Without the gap, near-duplicate titles tie with the one
 * typed (cosines 0.95-0.99) and the photo decides: the exact title came first for 0.939 of
 * fashion-dev's 2,256 titles at visual_weight 0.5, 0.996 with the gap (`npm run eval`, README).
 */
export const INEXACT_SCALE = 0.8;
/** Lexical weight of the query's coverage; the rest rewards products with few unmatched words. */
const QUERY_COVERAGE = 0.9;
const EDIT_PENALTY = 0.2;

/**
 * A text's distinct words for lexical matching: the text encoder's tokens, hyphens dropped
 * ("t-shirt" and "tshirt" are one word), accents removed, in order of first appearance.
 */
export function lexicalWords(text: string, limit = Infinity): string[] {
  const words = new Set<string>();
  for (const token of tokenize(text)) {
    const word = [...token.normalize("NFD").replace(/\p{M}/gu, "").replace(/-/g, "")].slice(0, LEXICAL_LIMITS.maxWordLength).join("");
    if (word === "") continue;
    words.add(word);
    if (words.size >= limit) break;
  }
  return [...words];
}

/**
 * Query words whose matches a vocabulary remembers, the oldest dropped first. The fuzzy and prefix
 * lookups were 8% of the service's main-thread time per REST search at 100k at 1 client (V8
 * profile, session 41). A shop's queries repeat, and their words repeat far more. A word's
 * matches are a few entries, about 0.4 KB, so with the 256 vocabularies a process keeps
 * (vocabularies.ts), 25 MB at most.
 */
const WORD_MATCHES_KEPT = 256;

/** One catalog's vocabulary as this process last read it from the index. */
export class LexicalVocabulary {
  private readonly tree = new SearchableMap<true>();
  /**
   * Each query word's matches, keyed by the word and whether it is also matched as a prefix (the
   * last word of a query); emptied by add.
   */
  private readonly wordMatches = new Map<string, ReadonlyMap<string, number>>();

  constructor(
    /**
     * Which build of the catalog's lexical index the words come from. A split index's names how
     * far each part's list was read, so it moves on as words are added.
     */
    public build: string,
    /** How many entries of the build's append-only word list (or lists) have been read. */
    public size = 0,
  ) {}

  /** Words read from the index's list, which now stands at `build`. */
  add(words: readonly string[], build = this.build): void {
    this.build = build;
    for (const word of words) this.tree.set(word, true);
    this.size += words.length;
    if (words.length > 0) this.wordMatches.clear();
  }

  /** Catalog words each query word matches, with the value of the match. */
  expand(queryWords: readonly string[]): ExpandedQuery {
    const perWord = queryWords.map((q, i) => this.matches(q, i === queryWords.length - 1));
    const best = new Map<string, number>();
    for (const matches of perWord) for (const [word, value] of matches) best.set(word, Math.max(best.get(word) ?? 0, value));
    // Best matches first: the index reads a common word's holders in this order, up to a budget.
    const words = [...best.keys()].sort((a, b) => best.get(b)! - best.get(a)!);
    const byWord = new Map(words.map((word) => [word, perWord.map((matches) => matches.get(word) ?? 0)]));
    return { typed: queryWords, perWord, words, byWord };
  }

  /** The catalog words `q` matches (shared: never modify); `last`: as a query's last word, also as a prefix. */
  private matches(q: string, last: boolean): ReadonlyMap<string, number> {
    const letters = [...q].length;
    const asPrefix = last && letters >= LEXICAL_LIMITS.prefixFrom;
    const key = asPrefix ? `${q} ` : q;
    const known = this.wordMatches.get(key);
    if (known) return known;
    const matches = new Map<string, number>();
    const edits = letters >= LEXICAL_LIMITS.twoEditsFrom ? 2 : letters >= LEXICAL_LIMITS.oneEditFrom ? 1 : 0;
    if (edits === 0) {
      if (this.tree.has(q)) matches.set(q, 1);
    } else {
      for (const [word, [, distance]] of this.tree.fuzzyGet(q, edits)) matches.set(word, 1 - EDIT_PENALTY * distance);
    }
    if (asPrefix) {
      const longer = [...this.tree.atPrefix(q).keys()]
        .filter((w) => w !== q)
        .sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, LEXICAL_LIMITS.maxPrefixWords);
      for (const word of longer) matches.set(word, Math.max(matches.get(word) ?? 0, (1 + letters / [...word].length) / 2));
    }
    if (this.wordMatches.size >= WORD_MATCHES_KEPT) this.wordMatches.delete(this.wordMatches.keys().next().value!);
    this.wordMatches.set(key, matches);
    return matches;
  }
}

export interface ExpandedQuery {
  /** The query's own words, in order (an exact match has exactly these). */
  typed: readonly string[];
  /** For each query word: the catalog words it matches and how well (0, 1]. */
  perWord: readonly ReadonlyMap<string, number>[];
  /** Every catalog word some query word matches, best matches first. */
  words: readonly string[];
  /** The same words, each with how well it matches each query word (perWord's values, 0 for none), to look up once a product word. */
  byWord: ReadonlyMap<string, readonly number[]>;
}

const RANK_ORDER: Readonly<Record<string, number>> = { SUPER_BOOST: 0, BOOST: 1 };

/**
 * Where a product comes in the order a common word's holders are read (README "Lexical matching
 * at scale"), lower first: its rank (SUPER_BOOST, BOOST, then the rest), then its fewest words. For
 * a word typed alone this is the order of their scores but where a boost is smaller than the
 * difference a word makes.
 */
export function holderOrder(rank: unknown, words: number): number {
  return 100_000 * (RANK_ORDER[String(rank)] ?? 2) + Math.min(words, 99_999);
}

/** The lexical similarity of a product with these words; NO_LEXICAL_MATCH when none matches. */
export function lexicalSimilarity(query: ExpandedQuery, productWords: readonly string[]): number {
  if (query.perWord.length === 0 || productWords.length === 0) return NO_LEXICAL_MATCH;
  // Each query word's best match among the product's words.
  const top = new Array<number>(query.perWord.length).fill(0);
  let matched = 0;
  for (const word of productWords) {
    const values = query.byWord.get(word);
    if (!values) continue;
    matched++;
    for (let i = 0; i < values.length; i++) if (values[i]! > top[i]!) top[i] = values[i]!;
  }
  if (matched === 0) return NO_LEXICAL_MATCH;
  if (sameWords(query.typed, productWords)) return 1;
  let best = 0;
  for (const value of top) best += value;
  return INEXACT_SCALE * (QUERY_COVERAGE * (best / query.perWord.length) + (1 - QUERY_COVERAGE) * (matched / productWords.length));
}

function sameWords(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((word, i) => word === b[i]);
}
