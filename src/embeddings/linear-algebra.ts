// Dense Float64 linear algebra for small closed-form fits (ridge regression): a blocked Gram
// product and a Cholesky solve. Matrices are row-major Float64Arrays. Plain loops, no dependencies;
// the Gram product is blocked 4 x 4 so each pass over memory feeds 16 multiply-adds, which is what
// makes a 5000 x 1291 fit take a second or two instead of ten.

/**
 * G = M M^T for M with `rows` rows of length `cols` (row-major): the rows' pairwise dot products,
 * a symmetric rows x rows matrix (both triangles filled).
 */
export function gramOfRows(m: Float64Array, rows: number, cols: number): Float64Array {
  if (m.length !== rows * cols) throw new Error(`gramOfRows: ${m.length} values for ${rows} x ${cols}`);
  const g = new Float64Array(rows * rows);
  const full = rows - (rows % 4);
  for (let i = 0; i < full; i += 4) {
    const a0 = i * cols, a1 = a0 + cols, a2 = a1 + cols, a3 = a2 + cols;
    for (let j = 0; j <= i; j += 4) {
      const b0 = j * cols, b1 = b0 + cols, b2 = b1 + cols, b3 = b2 + cols;
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0;
      let s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      let s20 = 0, s21 = 0, s22 = 0, s23 = 0;
      let s30 = 0, s31 = 0, s32 = 0, s33 = 0;
      for (let k = 0; k < cols; k++) {
        const x0 = m[a0 + k]!, x1 = m[a1 + k]!, x2 = m[a2 + k]!, x3 = m[a3 + k]!;
        const y0 = m[b0 + k]!, y1 = m[b1 + k]!, y2 = m[b2 + k]!, y3 = m[b3 + k]!;
        s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3;
        s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3;
        s20 += x2 * y0; s21 += x2 * y1; s22 += x2 * y2; s23 += x2 * y3;
        s30 += x3 * y0; s31 += x3 * y1; s32 += x3 * y2; s33 += x3 * y3;
      }
      const block = [s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33];
      for (let p = 0; p < 4; p++) {
        for (let q = 0; q < 4; q++) {
          const v = block[p * 4 + q]!;
          g[(i + p) * rows + (j + q)] = v;
          g[(j + q) * rows + (i + p)] = v;
        }
      }
    }
  }
  // The last rows % 4 rows, against every row.
  for (let i = full; i < rows; i++) {
    for (let j = 0; j <= i; j++) {
      let s = 0;
      for (let k = 0, a = i * cols, b = j * cols; k < cols; k++) s += m[a + k]! * m[b + k]!;
      g[i * rows + j] = s;
      g[j * rows + i] = s;
    }
  }
  return g;
}

/** The transpose of a rows x cols row-major matrix (cols x rows). */
export function transpose(m: Float64Array, rows: number, cols: number): Float64Array {
  const t = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    for (let c = 0; c < cols; c++) t[c * rows + r] = m[o + c]!;
  }
  return t;
}

/** C = A B for A (n x m), B (m x k): row-major, accumulated a row of B at a time. */
export function multiply(a: Float64Array, b: Float64Array, n: number, m: number, k: number): Float64Array {
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

/** C = A^T B for A (n x m), B (n x k): an m x k matrix, accumulated a row of A and B at a time. */
export function multiplyTransposedLeft(a: Float64Array, b: Float64Array, n: number, m: number, k: number): Float64Array {
  const c = new Float64Array(m * k);
  for (let r = 0; r < n; r++) {
    const ar = r * m, br = r * k;
    for (let j = 0; j < m; j++) {
      const arj = a[ar + j]!;
      if (arj === 0) continue;
      const cj = j * k;
      for (let t = 0; t < k; t++) c[cj + t] = c[cj + t]! + arj * b[br + t]!;
    }
  }
  return c;
}

/**
 * In-place Cholesky factorisation of a symmetric positive definite size x size matrix: on return the
 * lower triangle holds L with A = L L^T (the upper triangle is zeroed). Throws when A is not
 * positive definite (as ridge regression's A + lambda I always is for lambda > 0).
 */
export function choleskyInPlace(a: Float64Array, size: number): void {
  for (let j = 0; j < size; j++) {
    const rj = j * size;
    let diag = a[rj + j]!;
    for (let k = 0; k < j; k++) diag -= a[rj + k]! * a[rj + k]!;
    if (!(diag > 0)) throw new Error(`cholesky: matrix not positive definite at ${j} (pivot ${diag})`);
    const ljj = Math.sqrt(diag);
    a[rj + j] = ljj;
    for (let i = j + 1; i < size; i++) {
      const ri = i * size;
      let s = a[ri + j]!;
      for (let k = 0; k < j; k++) s -= a[ri + k]! * a[rj + k]!;
      a[ri + j] = s / ljj;
    }
    for (let i = j + 1; i < size; i++) a[rj + i] = 0;
  }
}

/**
 * Solves (L L^T) X = B in place for B (size x k, row-major), with L from choleskyInPlace:
 * forward substitution by rows, then backward substitution by rows of L (contiguous reads).
 */
export function choleskySolveInPlace(l: Float64Array, size: number, b: Float64Array, k: number): void {
  // L Z = B
  for (let i = 0; i < size; i++) {
    const ri = i * size, bi = i * k;
    for (let j = 0; j < i; j++) {
      const lij = l[ri + j]!;
      if (lij === 0) continue;
      const bj = j * k;
      for (let t = 0; t < k; t++) b[bi + t] = b[bi + t]! - lij * b[bj + t]!;
    }
    const inv = 1 / l[ri + i]!;
    for (let t = 0; t < k; t++) b[bi + t] = b[bi + t]! * inv;
  }
  // L^T X = Z: once row i of X is final, remove its share from rows j < i.
  for (let i = size - 1; i >= 0; i--) {
    const ri = i * size, bi = i * k;
    const inv = 1 / l[ri + i]!;
    for (let t = 0; t < k; t++) b[bi + t] = b[bi + t]! * inv;
    for (let j = 0; j < i; j++) {
      const lij = l[ri + j]!;
      if (lij === 0) continue;
      const bj = j * k;
      for (let t = 0; t < k; t++) b[bj + t] = b[bj + t]! - lij * b[bi + t]!;
    }
  }
}
