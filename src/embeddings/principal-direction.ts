// The first right singular vector of an (uncentred) set of vectors: the direction they share most.
// Power iteration on the d x d Gram matrix; d is 100 here, so this is instant.
import { l2NormaliseInPlace } from "./vector-math.js";

export function firstPrincipalDirection(rows: readonly Float64Array[], dimensions: number, iterations = 300): Float64Array {
  const gram = new Float64Array(dimensions * dimensions);
  for (const x of rows) {
    for (let i = 0; i < dimensions; i++) {
      const xi = x[i]!;
      if (xi === 0) continue;
      for (let j = 0; j < dimensions; j++) gram[i * dimensions + j] = gram[i * dimensions + j]! + xi * x[j]!;
    }
  }
  // A fixed start keeps the result (and its sign) identical from run to run.
  let v = new Float64Array(dimensions).fill(1 / Math.sqrt(dimensions));
  for (let it = 0; it < iterations; it++) {
    const next = new Float64Array(dimensions);
    for (let i = 0; i < dimensions; i++) {
      let s = 0;
      for (let j = 0; j < dimensions; j++) s += gram[i * dimensions + j]! * v[j]!;
      next[i] = s;
    }
    l2NormaliseInPlace(next);
    let change = 0;
    for (let i = 0; i < dimensions; i++) change = Math.max(change, Math.abs(next[i]! - v[i]!));
    v = next;
    if (change < 1e-12) break;
  }
  return v;
}
