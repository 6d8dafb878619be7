// The non-linear half of the text-image map: a Gaussian (RBF) kernel between a photo and up to
// 1,000 of the catalog's own photos ("landmarks"), and kernel ridge regression on it (restricted to
// the landmarks' span: the Nystrom method) of what the linear map leaves unexplained. What a photo
// shows is not a linear function of MobileNet's features (shoes of one kind sit in several clusters
// of them), and a linear map from 1,291 inputs is all a ridge on the raw features can learn.
//
// Fitting after the linear map (on its residuals) rather than jointly with it keeps the systems at
// m x m instead of (1,291 + m) x (1,291 + m), at no measured loss on fashion-dev. The landmarks are
// stored in the map: 1,000 x 1,291 float32 (5.2 MB), by dimension, so that a photo's projection
// reads only the rows of its non-zero features (MobileNet's are 60% zeros): about 0.5 M
// multiply-adds instead of the linear map's 0.13 M.
import { choleskyInPlace, choleskySolveRowsInPlace, rowDots, transpose } from "./linear-algebra.js";

export interface LandmarkKernel {
  readonly count: number;
  readonly dimensions: number;
  /** k(x, y) = exp(-gamma |x - y|^2) */
  readonly gamma: number;
  /** The landmarks by dimension: dimensions x count, row-major (landmark c's value j at j * count + c). */
  readonly columns: Float32Array;
  /** out[c] = k(x, landmark c) for one input. */
  evaluate(x: ArrayLike<number>, out: Float64Array): void;
  /** k(landmark c, row r) for every row of an n x dimensions matrix: count x n, row-major. */
  evaluateRows(rows: Float64Array, n: number): Float64Array;
}

export interface KernelRidgeOptions {
  /** At most this many landmarks (all samples when there are fewer). */
  landmarks: number;
  /** gamma = bandwidth / the median squared distance between landmarks. */
  bandwidth: number;
  /** Ridge penalty (alpha^T K_mm alpha: the function's norm in the kernel's space). */
  lambda: number;
}

export interface KernelFit {
  kernel: LandmarkKernel;
  /** The weights, transposed: output (k) x landmark (m). */
  alphaT: Float64Array;
  /** The mean of k(z, landmark c) over the samples: the prediction is alpha^T (k(z) - meanKernel). */
  meanKernel: Float64Array;
  /** What is left unexplained, as sums of squares and products (k x k). */
  residualProducts: Float64Array;
  /**
   * k(z, landmark c) - meanKernel[c] for every sample (m x n): computed for the fit anyway, and what
   * the fit needs again to map its own samples (the word prototypes) without re-evaluating the
   * kernel (about m d / 2 multiply-adds a sample).
   */
  centredRows: Float64Array;
}

/** Relative to the penalty, keeps the system factorable when two landmarks coincide. */
const JITTER = 1e-6;
/** The bandwidth's median is taken over the distances between this many landmarks at most. */
const MEDIAN_OF = 256;

export function landmarkKernel(columns: Float32Array, count: number, dimensions: number, gamma: number): LandmarkKernel {
  if (columns.length !== count * dimensions) throw new RangeError("landmark kernel: columns do not match count x dimensions");
  if (!(gamma > 0) || !Number.isFinite(gamma)) throw new RangeError(`landmark kernel: gamma must be positive, got ${gamma}`);
  const squares = new Float64Array(count);
  for (let j = 0; j < dimensions; j++) {
    for (let c = 0, o = j * count; c < count; c++) squares[c] = squares[c]! + columns[o + c]! * columns[o + c]!;
  }
  const nonZero = new Int32Array(dimensions);
  const kernelOf = (dotProduct: number, xSquare: number, c: number) => Math.exp(-gamma * Math.max(0, xSquare + squares[c]! - 2 * dotProduct));
  const evaluate = (x: ArrayLike<number>, out: Float64Array): void => {
    // out = landmarks x from the rows of the non-zero inputs, four rows per pass over out (half
    // the time of one): most of a photo's projection time.
    out.fill(0);
    let xs = 0, k = 0;
    for (let j = 0; j < dimensions; j++) {
      const v = x[j]!;
      if (v === 0) continue;
      xs += v * v;
      nonZero[k++] = j;
    }
    let i = 0;
    for (; i + 3 < k; i += 4) {
      const j0 = nonZero[i]!, j1 = nonZero[i + 1]!, j2 = nonZero[i + 2]!, j3 = nonZero[i + 3]!;
      const v0 = x[j0]!, v1 = x[j1]!, v2 = x[j2]!, v3 = x[j3]!;
      const o0 = j0 * count, o1 = j1 * count, o2 = j2 * count, o3 = j3 * count;
      for (let c = 0; c < count; c++) {
        out[c] = out[c]! + v0 * columns[o0 + c]! + v1 * columns[o1 + c]! + v2 * columns[o2 + c]! + v3 * columns[o3 + c]!;
      }
    }
    for (; i < k; i++) {
      const j = nonZero[i]!, v = x[j]!;
      for (let c = 0, o = j * count; c < count; c++) out[c] = out[c]! + v * columns[o + c]!;
    }
    for (let c = 0; c < count; c++) out[c] = kernelOf(out[c]!, xs, c);
  };
  return {
    count,
    dimensions,
    gamma,
    columns,
    evaluate,
    evaluateRows(rows, n) {
      // Row by row through evaluate: it skips the zero inputs, which a dense product cannot.
      const byRow = new Float64Array(n * count);
      for (let r = 0; r < n; r++) evaluate(rows.subarray(r * dimensions, (r + 1) * dimensions), byRow.subarray(r * count, (r + 1) * count));
      return transpose(byRow, n, count);
    },
  };
}

/**
 * Takes `count` rows spread evenly through the n rows as landmarks (deterministic: the same samples
 * give the same map), with gamma = bandwidth / the median squared distance between landmarks, so
 * that the kernel's width follows the catalog's own spread. Undefined when the landmarks do not
 * differ. `rows` are the landmarks' positions among the n rows.
 */
export function chooseLandmarks(
  inputs: Float64Array,
  n: number,
  dimensions: number,
  count: number,
  bandwidth: number,
): { kernel: LandmarkKernel; rows: number[] } | undefined {
  const m = Math.min(count, n);
  if (m < 2) return undefined;
  const rows = Array.from({ length: m }, (_, c) => Math.floor((c * n) / m));
  const columns = new Float32Array(m * dimensions);
  rows.forEach((r, c) => {
    for (let j = 0; j < dimensions; j++) columns[j * m + c] = inputs[r * dimensions + j]!;
  });
  // A median needs no more than a few tens of thousands of distances.
  const q = Math.min(m, MEDIAN_OF);
  const sample = new Float64Array(q * dimensions);
  for (let c = 0; c < q; c++) {
    const r = rows[Math.floor((c * m) / q)]!;
    sample.set(inputs.subarray(r * dimensions, (r + 1) * dimensions), c * dimensions);
  }
  const gram = rowDots(sample, q, dimensions);
  const distances = new Float64Array((q * (q - 1)) / 2);
  let i = 0;
  for (let a = 1; a < q; a++) for (let b = 0; b < a; b++) distances[i++] = Math.max(0, gram[a * q + a]! + gram[b * q + b]! - 2 * gram[a * q + b]!);
  distances.sort();
  const median = distances[distances.length >> 1]!;
  if (!(median > 0) || !Number.isFinite(median)) return undefined;
  return { kernel: landmarkKernel(columns, m, dimensions, bandwidth / median), rows };
}

/**
 * Kernel ridge regression of `residuals` (R^T, k x n, with sums of squares and products
 * `residualProducts`) on the kernel's inputs (n x dimensions), centred, in the landmarks' span:
 * alpha = argmin |R - (K - mean K) alpha|^2 + lambda alpha^T K_mm alpha, K (n x m) the samples
 * against the landmarks, K_mm the landmarks against each other. The m x m system costs n m^2 / 2
 * multiply-adds; computing K about n m d / 2 (half the inputs are zeros).
 */
export function fitKernelRidge(
  inputs: Float64Array,
  n: number,
  dimensions: number,
  residuals: Float64Array,
  residualProducts: Float64Array,
  k: number,
  options: KernelRidgeOptions,
): KernelFit | undefined {
  const chosen = chooseLandmarks(inputs, n, dimensions, options.landmarks, options.bandwidth);
  if (!chosen) return undefined;
  const { kernel, rows } = chosen;
  const { lambda } = options;
  const m = kernel.count;
  const kt = kernel.evaluateRows(inputs, n); // K^T, m x n
  // The landmarks are samples: K_mm is columns of K^T (and symmetric, so only its lower half is read).
  const kmm = new Float64Array(m * m);
  for (let c = 0; c < m; c++) for (let b = 0; b < m; b++) kmm[c * m + b] = kt[c * n + rows[b]!]!;
  const meanKernel = new Float64Array(m);
  for (let c = 0; c < m; c++) {
    const o = c * n;
    let s = 0;
    for (let r = 0; r < n; r++) s += kt[o + r]!;
    const mean = s / n;
    meanKernel[c] = mean;
    for (let r = 0; r < n; r++) kt[o + r] = kt[o + r]! - mean;
  }
  const a = rowDots(kt, m, n);
  for (let i = 0; i < m * m; i++) a[i] = a[i]! + lambda * kmm[i]!;
  for (let c = 0; c < m; c++) a[c * m + c] = a[c * m + c]! + lambda * JITTER;
  const bt = rowDots(residuals, k, n, kt, m); // B^T = ((K - mean K)^T R)^T
  const alphaT = new Float64Array(bt);
  choleskyInPlace(a, m);
  choleskySolveRowsInPlace(a, m, alphaT, k);
  // What is left, without forming it: (R - K alpha)^T (R - K alpha) = R^T R - alpha^T B -
  // lambda alpha^T K_mm alpha, because K^T K alpha = B - lambda K_mm alpha (K centred, jitter aside).
  const ab = rowDots(alphaT, k, m, bt, k);
  const kAlpha = rowDots(alphaT, k, m, kmm, m); // (K_mm alpha)^T
  const aka = rowDots(kAlpha, k, m, alphaT, k);
  const left = new Float64Array(k * k);
  for (let i = 0; i < k * k; i++) left[i] = residualProducts[i]! - ab[i]! - lambda * aka[i]!;
  return { kernel, alphaT, meanKernel, residualProducts: left, centredRows: kt };
}
