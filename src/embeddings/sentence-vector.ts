// Sentence vectors from word vectors, after Arora, Liang and Ma (2017), "A simple but tough-to-beat
// baseline for sentence embeddings" (SIF): a weighted mean where a word's weight a / (a + p(w))
// shrinks with its frequency, then removal of the common direction all such means share.
//
// p(w) comes from the word's rank in GloVe's vocabulary by Zipf's law, i.e. general-English
// frequency. Weighting by frequency within a product catalog would do the opposite of what is
// wanted: it down-weights exactly the category and colour words that titles repeat.
import { firstPrincipalDirection } from "./principal-direction.js";
import { tokenize, tokenRows } from "./tokenize.js";
import { removeProjectionInPlace } from "./vector-math.js";
import type { WordVectors } from "./word-vectors.js";

const SIF_A = 1e-3;
const EULER_GAMMA = 0.5772156649;

/** a / (a + p(rank)), p(rank) = 1 / ((rank + 1) H_n): "the" ~0.013, rank 1000 ~0.93, rare words ~1. */
export function sifWeight(row: number, vocabularySize: number): number {
  const p = 1 / ((row + 1) * (Math.log(vocabularySize) + EULER_GAMMA));
  return SIF_A / (SIF_A + p);
}

/** The weighted mean of the known words' vectors (before direction removal), and how many were known. */
export function weightedMean(text: string, vectors: WordVectors): { vector: Float64Array; known: number } {
  const vector = new Float64Array(vectors.dimensions);
  let total = 0;
  let known = 0;
  for (const token of tokenize(text)) {
    for (const row of tokenRows(token, vectors)) {
      const w = sifWeight(row, vectors.size);
      vectors.addTo(vector, row, w);
      total += w;
      known++;
    }
  }
  if (total > 0) for (let i = 0; i < vector.length; i++) vector[i] = vector[i]! / total;
  return { vector, known };
}

/** The first principal direction of the phrases' weighted means, to be projected out of every text. */
export function commonDirection(phrases: readonly string[], vectors: WordVectors): Float64Array {
  const means = phrases.map((p) => weightedMean(p, vectors)).filter((m) => m.known > 0).map((m) => m.vector);
  if (means.length === 0) return new Float64Array(vectors.dimensions);
  return firstPrincipalDirection(means, vectors.dimensions);
}

export function sentenceVector(text: string, vectors: WordVectors, direction: Float64Array): Float64Array | undefined {
  const { vector, known } = weightedMean(text, vectors);
  if (known === 0) return undefined;
  removeProjectionInPlace(vector, direction);
  return vector;
}
