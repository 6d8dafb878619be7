// How the feature harnesses (eval-features.ts, experiments/backbones.ts) turn a network's pooled
// activations into map inputs, as the service does for MobileNet's.
import { l2NormaliseInPlace } from "../src/embeddings/vector-math.js";

/** Square-rooted, unit length. */
export function rooted(vectors: readonly Float32Array[]): Float32Array[] {
  return vectors.map((v) => l2NormaliseInPlace(v.map((x) => Math.sqrt(Math.max(0, x)))));
}

/** Parts weighted and concatenated, unit length. */
export function combine(parts: [readonly Float32Array[], number][], count: number): Float32Array[] {
  return Array.from({ length: count }, (_, i) => {
    const pieces = parts.map(([vectors, w]) => vectors[i]!.map((x) => x * w));
    const out = new Float32Array(pieces.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of pieces) {
      out.set(p, o);
      o += p.length;
    }
    return l2NormaliseInPlace(out);
  });
}
