// Dense Float64 linear algebra for small closed-form fits (ridge regression): blocked dot-product
// matrices and a Cholesky solve. Matrices are row-major Float64Arrays. Plain loops, no
// dependencies. The kernels are written as dot products of contiguous rows, several at a time, so
// each pass over memory feeds many multiply-adds (the 4 x 4 Gram kernel: ~1.3 G multiply-adds per
// second on one core of the project's machines, two to three times the naive loops).

/**
 * C[i][j] = dot(a row i, b row j) for a (aRows x len) and b (bRows x len): an aRows x bRows matrix.
 * With b omitted, the symmetric Gram matrix of a's rows (a a^T), each pair computed once.
 */
export function rowDots(a: Float64Array, aRows: number, len: number, b?: Float64Array, bRows?: number): Float64Array {
  const symmetric = b === undefined;
  const other = b ?? a;
  const oRows = bRows ?? aRows;
  if (a.length !== aRows * len || other.length !== oRows * len) throw new Error("rowDots: sizes do not match");
  const c = new Float64Array(aRows * oRows);
  const aFull = aRows - (aRows % 4);
  const oFull = oRows - (oRows % 4);
  for (let i = 0; i < aFull; i += 4) {
    const a0 = i * len, a1 = a0 + len, a2 = a1 + len, a3 = a2 + len;
    // Symmetric: blocks on and below the diagonal only; the rest is mirrored at the end.
    const jEnd = symmetric ? i + 4 : oFull;
    for (let j = 0; j < jEnd; j += 4) {
      const b0 = j * len, b1 = b0 + len, b2 = b1 + len, b3 = b2 + len;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0;
      let s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      let s20 = 0, s21 = 0, s22 = 0, s23 = 0;
      let s30 = 0, s31 = 0, s32 = 0, s33 = 0;
      for (let k = 0; k < len; k++) {
        const x0 = a[a0 + k]!, x1 = a[a1 + k]!, x2 = a[a2 + k]!, x3 = a[a3 + k]!;
        const y0 = other[b0 + k]!, y1 = other[b1 + k]!, y2 = other[b2 + k]!, y3 = other[b3 + k]!;
        s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3;
        s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3;
        s20 += x2 * y0; s21 += x2 * y1; s22 += x2 * y2; s23 += x2 * y3;
        s30 += x3 * y0; s31 += x3 * y1; s32 += x3 * y2; s33 += x3 * y3;
      }
      let o = i * oRows + j;
      c[o] = s00; c[o + 1] = s01; c[o + 2] = s02; c[o + 3] = s03;
      o += oRows;
      c[o] = s10; c[o + 1] = s11; c[o + 2] = s12; c[o + 3] = s13;
      o += oRows;
      c[o] = s20; c[o + 1] = s21; c[o + 2] = s22; c[o + 3] = s23;
      o += oRows;
      c[o] = s30; c[o + 1] = s31; c[o + 2] = s32; c[o + 3] = s33;
    }
  }
  // What the 4 x 4 blocks left: the last aRows % 4 rows against every row of b (symmetric: up to
  // the diagonal) and, when not symmetric, the other rows against b's last oRows % 4 rows.
  const single = (i: number, j: number) => {
    let s = 0;
    for (let k = 0, p = i * len, q = j * len; k < len; k++) s += a[p + k]! * other[q + k]!;
    c[i * oRows + j] = s;
  };
  for (let i = aFull; i < aRows; i++) for (let j = 0; j < (symmetric ? i + 1 : oRows); j++) single(i, j);
  if (!symmetric) for (let i = 0; i < aFull; i++) for (let j = oFull; j < oRows; j++) single(i, j);
  if (symmetric) for (let i = 0; i < aRows; i++) for (let j = i + 1; j < aRows; j++) c[i * aRows + j] = c[j * aRows + i]!;
  return c;
}

/** The transpose of a rows x cols row-major matrix (cols x rows). */
export function transpose(m: Float64Array, rows: number, cols: number): Float64Array {
  if (m.length !== rows * cols) throw new Error("transpose: size does not match");
  const t = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    for (let c = 0; c < cols; c++) t[c * rows + r] = m[o + c]!;
  }
  return t;
}

/** C = A B for A (n x m), B (m x k), row-major, a row of B at a time (zeros of A skipped). */
export function multiply(a: Float64Array, b: Float64Array, n: number, m: number, k: number): Float64Array {
  if (a.length !== n * m || b.length !== m * k) throw new Error("multiply: sizes do not match");
  const c = new Float64Array(n * k);
  for (let i = 0; i < n; i++) {
    const ci = i * k;
    for (let j = 0; j < m; j++) {
      const aij = a[i * m + j]!;
      if (aij === 0) continue;
      const bj = j * k;
      for (let t = 0; t < k; t++) c[ci + t] = c[ci + t]! + aij * b[bj + t]!;
    }
  }
  return c;
}

/**
 * In-place Cholesky factorisation of a symmetric positive definite size x size matrix (only its
 * lower triangle is read): on return the lower triangle holds L with A = L L^T and the upper
 * triangle is zero. Throws when A is not (numerically) positive definite. Column by column
 * (Crout), four rows at a time so that row j of L is read once per four dot products.
 */
export function choleskyInPlace(a: Float64Array, size: number): void {
  if (a.length !== size * size) throw new Error("cholesky: size does not match");
  for (let j = 0; j < size; j++) {
    const rj = j * size;
    let diag = a[rj + j]!;
    for (let k = 0; k < j; k++) diag -= a[rj + k]! * a[rj + k]!;
    if (!(diag > 0) || !Number.isFinite(diag)) throw new Error(`cholesky: matrix not positive definite at ${j} (pivot ${diag})`);
    const ljj = Math.sqrt(diag);
    a[rj + j] = ljj;
    const inv = 1 / ljj;
    let i = j + 1;
    for (; i + 3 < size; i += 4) {
      const r0 = i * size, r1 = r0 + size, r2 = r1 + size, r3 = r2 + size;
      let s0 = a[r0 + j]!, s1 = a[r1 + j]!, s2 = a[r2 + j]!, s3 = a[r3 + j]!;
      for (let k = 0; k < j; k++) {
        const l = a[rj + k]!;
        s0 -= a[r0 + k]! * l;
        s1 -= a[r1 + k]! * l;
        s2 -= a[r2 + k]! * l;
        s3 -= a[r3 + k]! * l;
      }
      a[r0 + j] = s0 * inv;
      a[r1 + j] = s1 * inv;
      a[r2 + j] = s2 * inv;
      a[r3 + j] = s3 * inv;
    }
    for (; i < size; i++) {
      const ri = i * size;
      let s = a[ri + j]!;
      for (let k = 0; k < j; k++) s -= a[ri + k]! * a[rj + k]!;
      a[ri + j] = s * inv;
    }
  }
  for (let i = 0; i < size; i++) for (let j = i + 1; j < size; j++) a[i * size + j] = 0;
}

/**
 * Solves (L L^T) x = b for every row b of `rhs` (count x size, row-major), in place, with L from
 * choleskyInPlace. Each right-hand side is a contiguous row, so both substitutions are dot
 * products of contiguous rows (the backward one on L^T, transposed once here), four sides at a time.
 */
export function choleskySolveRowsInPlace(l: Float64Array, size: number, rhs: Float64Array, count: number): void {
  if (l.length !== size * size || rhs.length !== size * count) throw new Error("cholesky solve: sizes do not match");
  const u = transpose(l, size, size); // U = L^T, upper triangular
  let r = 0;
  for (; r + 3 < count; r += 4) {
    const b0 = r * size, b1 = b0 + size, b2 = b1 + size, b3 = b2 + size;
    // L z = b
    for (let i = 0; i < size; i++) {
      const li = i * size;
      let s0 = rhs[b0 + i]!, s1 = rhs[b1 + i]!, s2 = rhs[b2 + i]!, s3 = rhs[b3 + i]!;
      for (let k = 0; k < i; k++) {
        const v = l[li + k]!;
        s0 -= v * rhs[b0 + k]!;
        s1 -= v * rhs[b1 + k]!;
        s2 -= v * rhs[b2 + k]!;
        s3 -= v * rhs[b3 + k]!;
      }
      const inv = 1 / l[li + i]!;
      rhs[b0 + i] = s0 * inv;
      rhs[b1 + i] = s1 * inv;
      rhs[b2 + i] = s2 * inv;
      rhs[b3 + i] = s3 * inv;
    }
    // L^T x = z
    for (let i = size - 1; i >= 0; i--) {
      const ui = i * size;
      let s0 = rhs[b0 + i]!, s1 = rhs[b1 + i]!, s2 = rhs[b2 + i]!, s3 = rhs[b3 + i]!;
      for (let k = i + 1; k < size; k++) {
        const v = u[ui + k]!;
        s0 -= v * rhs[b0 + k]!;
        s1 -= v * rhs[b1 + k]!;
        s2 -= v * rhs[b2 + k]!;
        s3 -= v * rhs[b3 + k]!;
      }
      const inv = 1 / u[ui + i]!;
      rhs[b0 + i] = s0 * inv;
      rhs[b1 + i] = s1 * inv;
      rhs[b2 + i] = s2 * inv;
      rhs[b3 + i] = s3 * inv;
    }
  }
  for (; r < count; r++) {
    const b = r * size;
    for (let i = 0; i < size; i++) {
      let s = rhs[b + i]!;
      for (let k = 0, li = i * size; k < i; k++) s -= l[li + k]! * rhs[b + k]!;
      rhs[b + i] = s / l[i * size + i]!;
    }
    for (let i = size - 1; i >= 0; i--) {
      let s = rhs[b + i]!;
      for (let k = i + 1, ui = i * size; k < size; k++) s -= u[ui + k]! * rhs[b + k]!;
      rhs[b + i] = s / u[i * size + i]!;
    }
  }
}
