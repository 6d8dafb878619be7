// Word prototypes: where the photos of the products whose descriptors use a word sit, once mapped
// (the unit mean of their mapped photos), one per word of the catalog's descriptors, fitted with
// the text-image map and stored in it. A text query's visual side then stands beside its word
// vector at the prototypes of its words: "watch" is compared with mapped photos through where
// this catalog's watches' photos land, not only through GloVe's idea of the word, which sits far
// from the title vectors the map predicts (fashion-dev's withheld products' own titles classify
// their types at F1 0.560 against the type names; the mapped photos at 0.623).
//
// Measured on fashion-dev (bench/eval.ts: map fitted on the described half, zero-shot on the
// withheld half; bench/experiments/word-prototypes.ts for the settings): zero-shot type F1 0.623
// -> 0.667, "<type>" P@10 0.600 -> 0.634, "<colour>" P@10 0.458 -> 0.489, with the word vector
// and the prototypes at equal weight (0.5 and 1 measured alike; the prototypes alone: F1 0.662,
// colour 0.463). Words seen once are kept (words seen 3+ times only: F1 0.660).
import { tokenize } from "./tokenize.js";
import { dot } from "./vector-math.js";

/** Bounds the map's size (100 floats a word: 2 MB) whatever the catalog's vocabulary. */
export const MAX_PROTOTYPE_WORDS = 5000;

export interface WordPrototypes {
  words: string[];
  /** words.length x dimensions, unit rows. */
  vectors: Float32Array;
}

/** The unit mean mapped photo per descriptor word, for the MAX_PROTOTYPE_WORDS most used words. */
export function wordPrototypes(samples: readonly { descriptor: string; mapped: Float32Array }[], dimensions: number): WordPrototypes {
  // Counted first and summed for the chosen words only: a catalog's descriptors may hold far more
  // distinct words (SKUs, numbers) than are kept, and a sum is `dimensions` floats a word.
  const used = samples.filter(({ mapped }) => mapped.some((v) => v !== 0)).map(({ descriptor, mapped }) => ({ words: new Set(tokenize(descriptor)), mapped }));
  const counts = new Map<string, number>();
  for (const { words } of used) for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  // Most used first, then by spelling: the same samples give the same bytes.
  const chosen = [...counts].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0)).slice(0, MAX_PROTOTYPE_WORDS);
  const row = new Map(chosen.map(([word], w) => [word, w]));
  const sums = new Float64Array(chosen.length * dimensions);
  for (const { words, mapped } of used) {
    for (const word of words) {
      const w = row.get(word);
      if (w === undefined) continue;
      const o = w * dimensions;
      for (let i = 0; i < dimensions; i++) sums[o + i] = sums[o + i]! + mapped[i]!;
    }
  }
  const words: string[] = [];
  const vectors = new Float32Array(chosen.length * dimensions);
  chosen.forEach(([word], w) => {
    const sum = sums.subarray(w * dimensions, (w + 1) * dimensions);
    const norm = Math.sqrt(dot(sum, sum));
    if (!(norm > 0) || !Number.isFinite(norm)) return;
    const o = words.length * dimensions;
    for (let i = 0; i < dimensions; i++) vectors[o + i] = sum[i]! / norm;
    words.push(word);
  });
  return { words, vectors: vectors.slice(0, words.length * dimensions) };
}

export type PrototypeIndex = ReadonlyMap<string, Float32Array>;

export function prototypeIndex(words: readonly string[], vectors: Float32Array, dimensions: number): PrototypeIndex {
  return new Map(words.map((word, w) => [word, vectors.subarray(w * dimensions, (w + 1) * dimensions)]));
}

/**
 * normalise(words + normalise(sum of the query's words' prototypes)); the word vector itself when
 * it is all zero (no meaning to add to: such queries match on letters) or no word has a prototype.
 */
export function queryWithPrototypes(query: string, words: Float32Array, index: PrototypeIndex): Float32Array {
  if (!words.some((v) => v !== 0)) return words;
  const sum = new Float64Array(words.length);
  let found = false;
  for (const word of new Set(tokenize(query))) {
    const prototype = index.get(word);
    if (!prototype || prototype.length !== words.length) continue;
    found = true;
    for (let i = 0; i < sum.length; i++) sum[i] = sum[i]! + prototype[i]!;
  }
  if (!found) return words;
  const norm = Math.hypot(...sum);
  const out = new Float32Array(words.length);
  let length = 0;
  for (let i = 0; i < out.length; i++) {
    out[i] = words[i]! + sum[i]! / norm;
    length += out[i]! * out[i]!;
  }
  length = Math.sqrt(length);
  if (!(length > 0)) return words;
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / length;
  return out;
}
