// Dense-vector helpers shared by the encoders. Accumulation is in float64 where the caller passes
// one, so summing many int8 rows does not lose precision before normalisation.

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Scales v in place to unit length; an all-zero vector stays all-zero (no NaN). */
export function l2NormaliseInPlace<T extends Float32Array | Float64Array>(v: T): T {
  const n = Math.sqrt(dot(v, v));
  if (n === 0 || !Number.isFinite(n)) {
    v.fill(0);
    return v;
  }
  for (let i = 0; i < v.length; i++) v[i] = v[i]! / n;
  return v;
}

/** v -= (v . unit) unit, in place; unit must be unit length (or all zero, which leaves v as is). */
export function removeProjectionInPlace(v: Float64Array, unit: ArrayLike<number>): void {
  const d = dot(v, unit);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! - d * unit[i]!;
}
