// A filter's candidates scored in this process (the query script's modes 2 to 4): the best `count`
// of those passing every filter, exact as a scan's, and the query's lexical holders among them.
// Shared by candidates read whole for one query and those held between queries.
import type { JsonObject } from "../../catalogs/index.js";
import type { IndexHit, IndexQuery, LexicalHit } from "../../search/index.js";
import { BestHits } from "./best-hits.js";

export interface CandidateResult {
  hits: IndexHit[];
  /** Every candidate offered is among the hits (no more than `count` passed). */
  complete: boolean;
  /** The candidates holding one of the query's words (any other holder fails the filters). */
  lexical: LexicalHit[];
}

/**
 * Attributes and words may be offered as read (JSON, space-separated): they are parsed only when
 * the candidate is kept or a lexical holder, since thousands are scored for a few dozen hits.
 */
export class CandidateScores {
  private readonly best: BestHits;
  private readonly lexical: LexicalHit[] = [];
  /** The query's words, when it has any. */
  readonly words: ReadonlySet<string> | undefined;
  // Over the query's length: the element's trailing dims are not scored.
  readonly queryLength: number;

  constructor(private readonly query: IndexQuery) {
    this.best = new BestHits(query.count);
    this.words = query.lexical && new Set(query.lexical.words);
    this.queryLength = Math.hypot(...query.vector);
  }

  /** A candidate with its element: scored, and a lexical holder if it holds one of the query's words. */
  add(productId: string, element: Float32Array, attributes: JsonObject | string, words: readonly string[] | string): void {
    const kept = this.offer(productId, dotF32(this.query.vector, element) / this.queryLength, attributes);
    if (!this.words) return;
    // As read, a candidate's words are searched, not split: few of thousands hold a query word.
    if (typeof words === "string") {
      if (holdsAnyWord(words, this.words)) this.holder(productId, element, kept ?? attributes, wordsOf(words));
    } else if (words.some((w) => this.words!.has(w))) this.holder(productId, element, kept ?? attributes, words);
  }

  /** A candidate's cosine with the query; its attributes parsed when it is kept (else undefined). */
  offer(productId: string, cosine: number, attributes: JsonObject | string): JsonObject | undefined {
    if (!this.best.wants(productId, cosine)) return undefined;
    const parsed = parsedAttributes(attributes);
    this.best.keep({ productId, cosine, attributes: parsed });
    return parsed;
  }

  /** A candidate known to hold one of the query's words. */
  holder(productId: string, element: Float32Array, attributes: JsonObject | string, words: readonly string[]): void {
    this.lexical.push({ productId, dots: partDots(element, this.query.lexical!.visual, this.query.lexical!.text), attributes: parsedAttributes(attributes), words });
  }

  result(): CandidateResult {
    return { hits: this.best.hits(), complete: this.best.all, lexical: this.lexical };
  }
}

/**
 * The dot product for scoring candidates: here only ever of two Float32Arrays, so V8 keeps its
 * loop monomorphic (the shared vector-math dot, called with every array type, took 2.5 times as
 * long a candidate: 0.48-0.57 against 0.19-0.25 us at 203 dims).
 */
export function dotF32(a: Float32Array, b: Float32Array): number {
  return dotF32At(a, b, 0, a.length);
}

/** The dot product of a's first `length` dims with b's, b's read from `start` (a row of a packed array). */
export function dotF32At(a: Float32Array, b: Float32Array, start: number, length: number): number {
  let s = 0;
  for (let i = 0; i < length; i++) s += a[i]! * b[start + i]!;
  return s;
}

/** An element's dot products with the query's visual part (its first dims) and text part (the next). */
export function partDots(element: Float32Array, visual: Float32Array, text: Float32Array): { visual: number; text: number } {
  let v = 0;
  let t = 0;
  for (let i = 0; i < visual.length; i++) v += element[i]! * visual[i]!;
  for (let i = 0, at = visual.length; i < text.length; i++, at++) t += element[at]! * text[i]!;
  return { visual: v, text: t };
}

/** Whether a line of space-separated words holds one of `words` whole (no allocation). */
export function holdsAnyWord(line: string, words: Iterable<string>): boolean {
  for (const word of words) {
    for (let at = line.indexOf(word); at >= 0; at = line.indexOf(word, at + 1)) {
      const end = at + word.length;
      if ((at === 0 || line.charCodeAt(at - 1) === SPACE) && (end === line.length || line.charCodeAt(end) === SPACE)) return true;
    }
  }
  return false;
}

const SPACE = 32;

export function wordsOf(line: string): string[] {
  return line.split(" ").filter((w) => w !== "");
}

export function attributesOf(json: string): JsonObject {
  return json === "" ? {} : (JSON.parse(json) as JsonObject);
}

function parsedAttributes(attributes: JsonObject | string): JsonObject {
  return typeof attributes === "string" ? attributesOf(attributes) : attributes;
}
