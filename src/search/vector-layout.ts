// How a product is laid out as ONE vector, so that a single cosine nearest-neighbour query ranks
// products by the documented score:
//
//   score = visualWeight * cos(query visual, product visual)
//         + (1 - visualWeight) * max(S * cos(query text, product text), lexical)
//         + boost(product rank)
//
// S is lexical.ts's INEXACT_SCALE: only an exact match of the typed words reaches text similarity 1.
//
// The vector holds everything but the lexical term (lexical.ts): for a product with no lexical match
// (lexical = -1) the index's cosine gives the score; products with one are scored from their
// element's dot products with the query's parts (scoreFromDots), which the index returns for them.
//
// Product (element) vector, unit length by construction:
//   [ A*v | A*t | K*isBoost | K*isSuperBoost | pad ]      A = ALPHA / sqrt(2)
// v and t are the product's unit visual and text vectors (or zero when it has none), and pad takes
// up whatever length is left so every element has length exactly 1.
// Query vector, with the weights and boost amounts on the query side:
//   [ w*qv | (1-w)*S*qt | L*boost | L*superBoost | 0 ]    L = A / K
// Their dot product is A * score; the index returns cos = dot / |query|, so score = cos * |query| / A.
// Nothing product-specific depends on the weights or the boost amounts: changing either needs no
// reindex, and the exact score can be recovered from the index's similarity alone.
import type { Rank } from "../catalogs/index.js";
import { INEXACT_SCALE } from "./lexical.js";

/** Weight of the visual and text parts inside each element; the rest of the length is for boosts. */
const ALPHA = 0.9;
const A = ALPHA / Math.SQRT2;
/** Length of a boost flag: ALPHA^2 + K^2 <= 1 keeps room for both parts plus the flag. */
const K = 0.4;
const L = A / K;

/** After the visual and text parts: the two boost flags and the pad. */
const TAIL = 3;

/** Changes whenever element or query vectors would be built differently. */
export const VECTOR_LAYOUT_VERSION = "blend1-lex1";

export interface Boosts {
  /** Added to the score of BOOST products. */
  boost: number;
  /** Added to the score of SUPER_BOOST products. */
  superBoost: number;
}

export interface LayoutDimensions {
  visual: number;
  text: number;
}

export function layoutDimensions(dims: LayoutDimensions): number {
  return dims.visual + dims.text + TAIL;
}

/** A product's element vector; visual and text must each be unit length or all zero. */
export function elementVector(visual: Float32Array, text: Float32Array, rank: Rank): Float32Array {
  const out = new Float32Array(layoutDimensions({ visual: visual.length, text: text.length }));
  let used = 0;
  for (let i = 0; i < visual.length; i++) {
    out[i] = A * visual[i]!;
    used += out[i]! * out[i]!;
  }
  for (let i = 0; i < text.length; i++) {
    const x = A * text[i]!;
    out[visual.length + i] = x;
    used += x * x;
  }
  const flags = visual.length + text.length;
  if (rank === "BOOST") out[flags] = K;
  if (rank === "SUPER_BOOST") out[flags + 1] = K;
  if (rank !== "NO_BOOST") used += K * K;
  out[flags + 2] = Math.sqrt(Math.max(0, 1 - used));
  return out;
}

/**
 * The visual vector an element was built from (float rounding aside), given its text's length;
 * undefined when the element is too short to hold one (another layout).
 */
export function elementVisual(element: Float32Array, textDimensions: number): Float32Array | undefined {
  const visualDimensions = element.length - textDimensions - TAIL;
  if (visualDimensions <= 0) return undefined;
  const out = new Float32Array(visualDimensions);
  for (let i = 0; i < out.length; i++) out[i] = element[i]! / A;
  return out;
}

export interface QueryParts {
  /** Compared with each product's visual vector (unit length or zero). */
  visual: Float32Array;
  /** Compared with each product's text vector (unit length or zero). */
  text: Float32Array;
  /** 0 < visualWeight <= 1. */
  visualWeight: number;
  boosts: Boosts;
}

export interface QueryVector {
  vector: Float32Array;
  /** Converts the index's cosine similarity for this query into the documented score. */
  score(cosine: number): number;
}

/** Undefined when the weighted parts carry no signal (e.g. a query of unknown words). */
export function queryVector(parts: QueryParts): QueryVector | undefined {
  const { visual, text, visualWeight: w, boosts } = parts;
  const out = new Float32Array(layoutDimensions({ visual: visual.length, text: text.length }));
  let lengthSquared = 0;
  for (let i = 0; i < visual.length; i++) {
    out[i] = w * visual[i]!;
    lengthSquared += out[i]! * out[i]!;
  }
  for (let i = 0; i < text.length; i++) {
    const x = (1 - w) * INEXACT_SCALE * text[i]!;
    out[visual.length + i] = x;
    lengthSquared += x * x;
  }
  // Boosts alone would rank every product alike.
  if (lengthSquared === 0) return undefined;
  const flags = visual.length + text.length;
  out[flags] = L * boosts.boost;
  out[flags + 1] = L * boosts.superBoost;
  lengthSquared += out[flags]! * out[flags]! + out[flags + 1]! * out[flags + 1]!;
  const length = Math.sqrt(lengthSquared);
  return { vector: out, score: (cosine) => (cosine * length) / A };
}

/**
 * The documented score from an element's dot products with the query's unit visual and text vectors
 * (dots over the element's visual and text parts, as stored: A times the product's vectors).
 */
export function scoreFromDots(
  dots: { visual: number; text: number },
  rank: Rank,
  query: Pick<QueryParts, "visualWeight" | "boosts">,
  lexical: number,
): number {
  const w = query.visualWeight;
  return w * (dots.visual / A) + (1 - w) * Math.max((INEXACT_SCALE * dots.text) / A, lexical) + boostOf(rank, query.boosts);
}

function boostOf(rank: Rank, boosts: Boosts): number {
  return rank === "BOOST" ? boosts.boost : rank === "SUPER_BOOST" ? boosts.superBoost : 0;
}

