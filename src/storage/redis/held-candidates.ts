// A filter's candidates held between queries (candidate-sets.ts), laid out for scoring: every
// element in one Float32Array, row after row, and every candidate's words as numbers into the set's
// own word list. Scoring is then a walk through memory in order. Kept as objects (an element and a
// word array a candidate, scattered over a large heap), a candidate cost 0.34 us at 100k products
// and 2.2-2.8 us at 1M, most of it waiting on memory: the dot product and, for a query with words,
// looking up each of the candidate's words.
//
// Brought up to date in place (update): a written product's row is marked gone and its new version
// appended, and the rows are packed again once more are gone than live. In place is safe because
// replies for one hash tag come back in the order the query script ran (one connection a node):
// two queries sent with the same generation get updates of which the later covers the earlier's
// writes, so applying both in turn leaves the set as the later one's generation says.
import type { JsonObject } from "../../catalogs/index.js";
import { matchesFilters } from "../../search/index.js";
import type { IndexQuery } from "../../search/index.js";
import { CandidateScores, dotF32At } from "./candidate-scores.js";
import type { CandidateResult } from "./candidate-scores.js";
import type { CachedHolder } from "./holder-cache.js";

/** A product as a candidate is read (mostly the holder cache's own objects), with its id. */
export interface Candidate extends Omit<CachedHolder, "stamp"> {
  productId: string;
}

/** A gone row's id (no product's id is empty). */
const GONE = "";
const NO_WORDS: readonly string[] = [];
const NO_ATTRIBUTES: JsonObject = {};

export class HeldCandidates {
  /** Floats a row: the longest element's length (a shorter one is padded with zeros). */
  private stride = 0;
  private elements = new Float32Array(0);
  /** Row by row; GONE for a row whose product was written since. */
  private ids: string[] = [];
  private attributes: JsonObject[] = [];
  /** As read, for the lexical hits. */
  private words: (readonly string[])[] = [];
  /** Row r's words are wordIds[wordStarts[r]] up to wordIds[wordStarts[r + 1]]. */
  private wordStarts = new Uint32Array(1);
  private wordIds = new Int32Array(0);
  /** The words of the rows, each numbered once. */
  private wordNumbers = new Map<string, number>();
  private rowOf = new Map<string, number>();
  private gone = 0;

  constructor(candidates: readonly Candidate[]) {
    this.fill(candidates);
  }

  /** Candidates held (rows not gone). */
  get size(): number {
    return this.rowOf.size;
  }

  /**
   * The products written since (`written`) leave the set, and those of them that still pass its
   * filters (`passing`, as they are now) come back.
   */
  update(written: Iterable<string>, passing: readonly Candidate[]): void {
    for (const productId of written) this.remove(productId);
    for (const c of passing) this.append(c);
    if (this.gone > MIN_GONE_TO_PACK && this.gone > this.size) this.pack();
  }

  /** The best `query.count` candidates passing its filters (all of them pass the eq/in ones: `decided`, every filter). */
  score(query: IndexQuery, decided: boolean): CandidateResult {
    const scores = new CandidateScores(query);
    const vector = query.vector;
    const dims = Math.min(vector.length, this.stride);
    const { elements, ids, stride } = this;
    const asked = this.askedWords(scores.words);
    for (let row = 0, rows = ids.length; row < rows; row++) {
      const productId = ids[row]!;
      if (productId === GONE) continue;
      const attributes = this.attributes[row]!;
      if (!decided && !matchesFilters(query.filters, attributes)) continue;
      const start = row * stride;
      scores.offer(productId, dotF32At(vector, elements, start, dims) / scores.queryLength, attributes);
      if (asked && this.holdsAny(row, asked)) scores.holder(productId, elements.subarray(start, start + stride), attributes, this.words[row]!);
    }
    return scores.result();
  }

  /** Which of the rows' word numbers the query asks for; undefined when no row holds any of its words. */
  private askedWords(words: ReadonlySet<string> | undefined): Uint8Array | undefined {
    if (!words) return undefined;
    let asked: Uint8Array | undefined;
    for (const w of words) {
      const n = this.wordNumbers.get(w);
      if (n === undefined) continue;
      asked ??= new Uint8Array(this.wordNumbers.size);
      asked[n] = 1;
    }
    return asked;
  }

  private holdsAny(row: number, asked: Uint8Array): boolean {
    for (let k = this.wordStarts[row]!, end = this.wordStarts[row + 1]!; k < end; k++) if (asked[this.wordIds[k]!] === 1) return true;
    return false;
  }

  private remove(productId: string): void {
    const row = this.rowOf.get(productId);
    if (row === undefined) return;
    this.rowOf.delete(productId);
    this.ids[row] = GONE;
    this.attributes[row] = NO_ATTRIBUTES;
    this.words[row] = NO_WORDS;
    this.gone++;
  }

  private append(c: Candidate): void {
    this.remove(c.productId);
    if (c.element.length > this.stride) this.widen(c.element.length);
    const row = this.ids.length;
    this.reserve(row + 1, this.wordStarts[row]! + c.words.length);
    this.elements.set(c.element, row * this.stride);
    this.ids.push(c.productId);
    this.attributes.push(c.attributes);
    this.words.push(c.words);
    let k = this.wordStarts[row]!;
    for (const w of c.words) {
      let n = this.wordNumbers.get(w);
      if (n === undefined) this.wordNumbers.set(w, (n = this.wordNumbers.size));
      this.wordIds[k++] = n;
    }
    this.wordStarts[row + 1] = k;
    this.rowOf.set(c.productId, row);
  }

  /** Room for `rows` rows and `words` word numbers, doubled as they grow. */
  private reserve(rows: number, words: number): void {
    if (rows * this.stride > this.elements.length) {
      const elements = new Float32Array(Math.max(rows, 2 * this.ids.length, 16) * this.stride);
      elements.set(this.elements);
      this.elements = elements;
    }
    if (rows + 1 > this.wordStarts.length) {
      const starts = new Uint32Array(Math.max(rows + 1, 2 * this.wordStarts.length));
      starts.set(this.wordStarts);
      this.wordStarts = starts;
    }
    if (words > this.wordIds.length) {
      const ids = new Int32Array(Math.max(words, 2 * this.wordIds.length, 256));
      ids.set(this.wordIds);
      this.wordIds = ids;
    }
  }

  /** Rows of `stride` floats from now on, the rows held so far copied over. */
  private widen(stride: number): void {
    const elements = new Float32Array(Math.max(this.ids.length, 16) * stride);
    for (let row = 0; row < this.ids.length; row++) elements.set(this.elements.subarray(row * this.stride, (row + 1) * this.stride), row * stride);
    this.elements = elements;
    this.stride = stride;
  }

  /** Every live row again, in order, into new arrays (the gone rows' words no longer numbered). */
  private pack(): void {
    const live: Candidate[] = [];
    for (let row = 0; row < this.ids.length; row++) {
      const productId = this.ids[row]!;
      if (productId === GONE) continue;
      live.push({ productId, element: this.elements.subarray(row * this.stride, (row + 1) * this.stride), attributes: this.attributes[row]!, words: this.words[row]! });
    }
    this.ids = [];
    this.attributes = [];
    this.words = [];
    this.wordNumbers = new Map();
    this.rowOf = new Map();
    this.gone = 0;
    this.fill(live);
  }

  /** The candidates into empty rows, their arrays sized for them at once. */
  private fill(candidates: readonly Candidate[]): void {
    let words = 0;
    for (const c of candidates) {
      this.stride = Math.max(this.stride, c.element.length);
      words += c.words.length;
    }
    this.elements = new Float32Array(candidates.length * this.stride);
    this.wordStarts = new Uint32Array(candidates.length + 1);
    this.wordIds = new Int32Array(words);
    for (const c of candidates) this.append(c);
  }
}

/** Gone rows tolerated before packing whatever the set's size: a small set is cheap to walk. */
const MIN_GONE_TO_PACK = 256;
