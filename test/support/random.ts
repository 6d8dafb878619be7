// Deterministic pseudo-random numbers for tests and benchmarks (mulberry32), so failures reproduce.

export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomUnit(random: () => number, dims: number): Float32Array {
  const v = new Float32Array(dims);
  let n = 0;
  for (let i = 0; i < dims; i++) {
    v[i] = random() * 2 - 1;
    n += v[i]! * v[i]!;
  }
  n = Math.sqrt(n);
  for (let i = 0; i < dims; i++) v[i] = v[i]! / n;
  return v;
}
