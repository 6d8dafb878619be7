// Issue 12: the oracle of supervised-ceiling.ts and colour-descriptors.ts: the map's own recipe
// fitted to a label the service never knows (the true article type or base colour, one-hot)
// instead of the title vectors, and the precision of ranking by its outputs.
import { fitTextImageMap } from "../../src/embeddings/index.js";
import type { FitTextImageMapOptions } from "../../src/embeddings/index.js";
import { topK } from "../eval.js";

/** A product's label, by its position in the catalog. */
export type Label = (i: number) => string;

/** What the oracle reads of the catalog: its size, and each photo's features and colour input. */
export interface OracleInputs {
  count: number;
  image: (i: number) => Float32Array;
  colour: (i: number) => Float32Array;
}

export interface Oracle {
  /** A photo's outputs: output k is classes[k]'s score. */
  place: (i: number) => Float32Array;
  classes: string[];
}

/**
 * The oracle for one label, fitted on `train`: outputs in the one-hot space itself (no whitening,
 * mean kept). One order of the labels for every fit (the 100 most common of the catalog), so that
 * photos placed by oracles of different folds are comparable.
 */
export function fitOracle(inputs: OracleInputs, train: readonly number[], label: Label, options: FitTextImageMapOptions = {}): Oracle {
  const counts = new Map<string, number>();
  for (let i = 0; i < inputs.count; i++) counts.set(label(i), (counts.get(label(i)) ?? 0) + 1);
  const classes = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 100).map(([c]) => c);
  const samples = train.map((i) => {
    const text = new Float32Array(100);
    const k = classes.indexOf(label(i));
    if (k >= 0) text[k] = 1;
    return { image: inputs.image(i), colour: inputs.colour(i), text };
  });
  const map = fitTextImageMap(samples, { whitening: false, removeMeanDirection: false, ...options });
  return { place: (i) => map.apply(inputs.image(i), inputs.colour(i)), classes };
}

/** P@10 of ranking the `measured` products by their score for each label value 10+ of them hold. */
export function labelP10(oracle: Oracle, measured: readonly number[], label: Label): number {
  const placed = measured.map(oracle.place);
  const counts = new Map<string, number>();
  for (const i of measured) counts.set(label(i), (counts.get(label(i)) ?? 0) + 1);
  const wanted = [...counts].filter(([, n]) => n >= 10).map(([c]) => c);
  let sum = 0;
  for (const c of wanted) {
    const k = oracle.classes.indexOf(c);
    const top = topK(placed.map((v) => (k >= 0 ? v[k]! : 0)), 10);
    sum += top.filter((r) => label(measured[r]!) === c).length / 10;
  }
  return sum / wanted.length;
}
