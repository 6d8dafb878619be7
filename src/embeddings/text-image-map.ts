// A map from a product photo's features into the text space, so that a text query can be compared
// with products that have no words of their own (zero-shot), learned from the catalog's own
// (photo, descriptor) pairs. There is no joint text/image model to be had offline here; this learns
// one side of it: closed-form ridge regression from [image features | w * colour profile] to the
// descriptor's sentence vector, kernel ridge regression of what that leaves (rbf-landmarks.ts),
// then two fixed adjustments of the output (see fitTextImageMap).
//
// Pure and dependency-free (Float64 arithmetic, Cholesky solves). The fit solves the primal
// (d x d) system when the samples outnumber the input dimensions, else the dual (n x n) one.
import { choleskyInPlace, choleskySolveRowsInPlace, rowDots, transpose } from "./linear-algebra.js";
import { prototypeIndex, queryWithPrototypes, wordPrototypes } from "./word-prototypes.js";
import { fitKernelRidge, landmarkKernel, type KernelFit, type KernelRidgeOptions, type LandmarkKernel } from "./rbf-landmarks.js";

export interface TextImageMap {
  /** Image feature dimensions + colour profile dimensions. */
  readonly inputDimensions: number;
  readonly outputDimensions: number;
  /** Samples the map was fitted on (those with a non-zero text vector). */
  readonly trainedOn: number;
  /** Identifies the map's exact weights: mapped vectors are comparable only under one version. */
  readonly version: string;
  /** The photo's position in the text space, L2-normalised (all zero only for degenerate input). */
  apply(imageFeatures: Float32Array, colour: Float32Array): Float32Array;
  /**
   * Where a text query stands among the mapped photos (word-prototypes.ts): its word vector and, at
   * equal weight, the prototypes of its words that the catalog's titles hold, unit length. The word
   * vector unchanged when the map has no prototypes or none of the query's words has one.
   */
  queryVisual(query: string, words: Float32Array): Float32Array;
  toBytes(): Buffer;
}

export interface TextImageSample {
  image: Float32Array;
  colour: Float32Array;
  /** The descriptor's text vector; an all-zero one (no known word) makes the sample count for nothing. */
  text: Float32Array;
  /** The descriptor itself: its words get prototypes (word-prototypes.ts). */
  descriptor?: string;
}

export interface FitTextImageMapOptions {
  /** Ridge penalty on the weights (inputs and targets are centred, so the intercept is free). */
  lambda?: number;
  /** Scale of the colour profile next to the unit-length image features. */
  colourWeight?: number;
  /**
   * Regulariser of the residual whitening, relative to the residuals' mean variance: outputs are
   * multiplied by (C + w mean(diag C) I)^-1, C the covariance of what the photos do not predict of
   * their text vectors. Larger w whitens less; false turns it off.
   */
  whitening?: number | false;
  /** Project the mean text direction out of the outputs (default true). */
  removeMeanDirection?: boolean;
  /**
   * Kernel ridge regression of what the linear map leaves, on an RBF kernel against landmark photos
   * (rbf-landmarks.ts); default DEFAULT_KERNEL, false: the linear map alone.
   */
  kernel?: KernelOptions | false;
}

export interface KernelOptions extends KernelRidgeOptions {
  /** Scale of the colour profile next to the image features in the kernel's input. */
  colourWeight: number;
}

// Chosen on fashion-dev's described half only (bench/eval.ts --cv), by 5-fold cross-validation of
// how well a held-out photo's output ranks its own title among the fold's titles and the reverse
// (mean reciprocal rank), over lambda 0.3 / 0.5 / 1 for each step, bandwidth 1 / 2 and whitening
// 0.3 / 1: the best pair of ranks is also, on the withheld half, better than the previous linear
// map (lambda 0.3) on every measure but colour precision, which holds (0.356 against 0.361). The
// kernel's colour weight 0.5 ranked above 1 and 2. More landmarks help (zero-shot type F1 0.579
// with 250, 0.597 with 500, 0.623 with 1,000) at a cost linear in their number. A larger lambda
// trades type for colour precision.
export const DEFAULT_LAMBDA = 1;
export const DEFAULT_COLOUR_WEIGHT = 1;
export const DEFAULT_WHITENING = 0.3;
export const DEFAULT_KERNEL: KernelOptions = { landmarks: 1000, bandwidth: 2, colourWeight: 0.5, lambda: 0.5 };

const MAGIC = 0x4d495456; // "VTIM" little-endian
/**
 * 1: linear weights and bias; 2: and, when the header names a kernel, its landmarks and weights;
 * 3: and, when the header lists prototype words, their vectors (word x output).
 */
const FORMAT = 3;
/**
 * Names the fitting recipe; stored in every map and part of its version. "ridge1" (maps stored
 * without a recipe) kept the mean text vector in the outputs and neither whitened nor removed the
 * mean direction; "ridge2" was the linear map alone; "ridge3-rbf" had no word prototypes
 * (word-prototypes.ts): a caller may refit maps whose version does not start with this.
 */
export const TEXT_IMAGE_MAP_RECIPE = "ridge3-rbf-proto1";

interface MapHeader {
  /** Absent in maps of the first recipe. */
  recipe?: string;
  imageDimensions: number;
  colourDimensions: number;
  outputDimensions: number;
  trainedOn: number;
  lambda: number;
  colourWeight: number;
  whitening: number | false;
  removeMeanDirection: boolean;
  /** Absent in linear maps. */
  kernel?: { landmarks: number; gamma: number; colourWeight: number; bandwidth: number; lambda: number };
  /** Words with a prototype, in the order of their vectors; absent in maps before format 3. */
  prototypeWords?: string[];
}

interface MapParts extends MapHeader {
  /** (image + colour) x output, row-major, colour rows already scaled by colourWeight. */
  weights: Float32Array;
  /** Added to every output before normalisation. */
  bias: Float32Array;
  /**
   * Present when the header names a kernel: its landmarks (in the kernel's input space, by
   * dimension: see LandmarkKernel.columns) and weights (landmark x output).
   */
  kernelParts?: { columns: Float32Array; weights: Float32Array };
  /** Present when the header lists prototype words: word x output, unit rows. */
  prototypes?: Float32Array;
}

/**
 * Fits the map on (photo, descriptor) pairs; samples whose text vector is all zero are skipped.
 *   1. Ridge regression, centred, from z = [image | colourWeight * colour] to the text vector t:
 *      W = argmin sum |(t - mean t) - W^T (z - mean z)|^2 + lambda |W|^2, solved in the primal
 *      (d x d) form when there are at least as many samples as varying input dimensions, else in
 *      the dual (n x n) form. The outputs are thus centred: a photo's offset from the average
 *      product. (Keeping the mean makes every photo lean towards the type names that resemble the
 *      average title: zero-shot type F1 0.20 instead of 0.52 for plain ridge on fashion-dev.)
 *   2. Unless options.kernel is false, kernel ridge regression of what step 1 left unexplained on
 *      an RBF kernel against up to 1,000 landmark photos (rbf-landmarks.ts): the residuals'
 *      prediction alpha^T (k(z') - mean k) is added to the output. On fashion-dev this lifts
 *      zero-shot type F1 from 0.56 to 0.62 and "<type>" precision@10 from 0.50 to 0.60 (the
 *      linear map at its own best lambda, 0.3: 0.59 and 0.51).
 *   3. Residual whitening: W <- W S, S = (C + w mean(diag C) I)^-1, C the covariance of the
 *      training residuals, so that directions of the text space a photo does not predict (brand
 *      names, mostly) weigh less in a text query's dot product with the output.
 *   4. The catalog's mean text direction projected out of the outputs, as SIF removes the common
 *      direction of sentences: ranking by q . out is then ranking by (q - mean t) . out.
 *   5. When the samples carry their descriptors, each descriptor word's prototype: the unit mean
 *      of the outputs of the samples that use it (word-prototypes.ts), for queryVisual.
 * apply(z) = normalise(W^T (z - mean z) + alpha^T (k(z') - mean k)).
 */
export function fitTextImageMap(samples: readonly TextImageSample[], options: FitTextImageMapOptions = {}): TextImageMap {
  const settings = fitSettings(options);
  const { lambda, colourWeight, whitening, removeMeanDirection, kernelOptions } = settings;
  const { used, di, dc, k } = usableSamples(samples);
  const n = used.length;
  const d = di + dc;
  const { meanZ, meanT, active } = inputStatistics(used, d, k, colourWeight);
  const da = active.length;

  // 1. Ridge regression. wt: the weights, transposed (k x da); rr: the residuals' sums of squares
  // and products (k x k); residuals: the residuals themselves (k x n), for the kernel step only.
  const { yt, targetSquares } = centredTargets(used, meanT, k);
  let { wt, rr, residuals } = ridge(used, { meanZ, active, colourWeight, lambda, yt, k }, kernelOptions !== false);

  // 2. The kernel step: its weights (alpha^T, k x m) sit next to W's in wt, so that whitening and
  // the mean direction treat both alike.
  let kernel: KernelFit | undefined;
  if (kernelOptions !== false && residuals) {
    const inputs = new Float64Array(n * d);
    used.forEach((s, r) => inputInto(inputs.subarray(r * d, (r + 1) * d), s.image, s.colour, kernelOptions.colourWeight));
    kernel = fitKernelRidge(inputs, n, d, residuals, rr, k, kernelOptions);
    if (kernel) {
      wt = joinColumns(wt, da, kernel.alphaT, kernel.kernel.count, k);
      rr = kernel.residualProducts;
    }
  }
  const m = kernel?.kernel.count ?? 0;
  const columns = da + m;

  // 3 and 4.
  if (columns > 0 && whitening !== false) wt = whiten(wt, rr, targetSquares, n, k, columns, whitening);
  if (columns > 0 && removeMeanDirection) projectOutInPlace(wt, meanT, k, columns);

  const parts: MapParts = {
    recipe: TEXT_IMAGE_MAP_RECIPE,
    imageDimensions: di,
    colourDimensions: dc,
    outputDimensions: k,
    trainedOn: n,
    lambda,
    colourWeight,
    whitening,
    removeMeanDirection,
    ...(kernel && kernelOptions !== false
      ? {
          kernel: {
            landmarks: m,
            gamma: kernel.kernel.gamma,
            colourWeight: kernelOptions.colourWeight,
            bandwidth: kernelOptions.bandwidth,
            lambda: kernelOptions.lambda,
          },
        }
      : {}),
    ...mapWeights(wt, { active, meanZ, di, d, k, colourWeight, kernel }),
  };
  // 5. The prototypes are means of the finished map's outputs, so they are placed with it.
  const described: { descriptor: string; mapped: Float32Array }[] = [];
  used.forEach((s, r) => s.descriptor && described.push({ descriptor: s.descriptor, mapped: mappedSample(parts, s, kernel, r, n) }));
  if (described.length === 0) return makeMap(parts);
  const prototypes = wordPrototypes(described, k);
  return makeMap({ ...parts, prototypeWords: prototypes.words, prototypes: prototypes.vectors });
}

/**
 * What the finished map's apply gives for training sample r (of n), with its kernel values taken
 * from the fit's own rows rather than evaluated again (most of apply's cost).
 */
function mappedSample(parts: MapParts, s: TextImageSample, kernel: KernelFit | undefined, r: number, n: number): Float32Array {
  const { imageDimensions: di, outputDimensions: k, weights, bias } = parts;
  const out = new Float64Array(bias);
  addRows(out, s.image, weights, 0, k);
  addRows(out, s.colour, weights, di, k);
  if (kernel && parts.kernelParts) {
    const m = kernel.kernel.count;
    const values = new Float64Array(m);
    for (let c = 0; c < m; c++) values[c] = kernel.centredRows[c * n + r]! + kernel.meanKernel[c]!;
    addRows(out, values, parts.kernelParts.weights, 0, k);
  }
  return unitOutput(out);
}

/** The output normalised to unit length, as a Float32Array (all zero when it has no length). */
function unitOutput(out: Float64Array): Float32Array {
  let norm = 0;
  for (let t = 0; t < out.length; t++) norm += out[t]! * out[t]!;
  norm = Math.sqrt(norm);
  const result = new Float32Array(out.length);
  if (norm > 0 && Number.isFinite(norm)) for (let t = 0; t < out.length; t++) result[t] = out[t]! / norm;
  return result;
}

interface FitSettings {
  lambda: number;
  colourWeight: number;
  whitening: number | false;
  removeMeanDirection: boolean;
  kernelOptions: KernelOptions | false;
}

function fitSettings(options: FitTextImageMapOptions): FitSettings {
  const lambda = options.lambda ?? DEFAULT_LAMBDA;
  const colourWeight = options.colourWeight ?? DEFAULT_COLOUR_WEIGHT;
  const whitening = options.whitening ?? DEFAULT_WHITENING;
  const kernelOptions = options.kernel ?? DEFAULT_KERNEL;
  if (!(lambda > 0) || !Number.isFinite(lambda)) throw new RangeError(`lambda must be a positive number, got ${lambda}`);
  if (!(colourWeight >= 0) || !Number.isFinite(colourWeight)) throw new RangeError(`colourWeight must be >= 0, got ${colourWeight}`);
  if (whitening !== false && (!(whitening > 0) || !Number.isFinite(whitening))) {
    throw new RangeError(`whitening must be a positive number or false, got ${whitening}`);
  }
  if (kernelOptions !== false) checkKernelOptions(kernelOptions);
  return { lambda, colourWeight, whitening, removeMeanDirection: options.removeMeanDirection ?? true, kernelOptions };
}

/** The samples with a text signal, after checking that all share one shape. */
function usableSamples(samples: readonly TextImageSample[]): { used: TextImageSample[]; di: number; dc: number; k: number } {
  const first = samples[0];
  if (!first) throw new RangeError("fitTextImageMap: no samples");
  const di = first.image.length, dc = first.colour.length, k = first.text.length;
  if (k === 0 || di + dc === 0) throw new RangeError("fitTextImageMap: empty vectors");
  for (const s of samples) {
    if (s.image.length !== di || s.colour.length !== dc || s.text.length !== k) {
      throw new RangeError(`fitTextImageMap: samples differ in dimensions (${s.image.length}/${s.colour.length}/${s.text.length} vs ${di}/${dc}/${k})`);
    }
  }
  const used = samples.filter((s) => s.text.some((v) => v !== 0));
  if (used.length === 0) throw new RangeError("fitTextImageMap: every sample has an all-zero text vector");
  return { used, di, dc, k };
}

/**
 * Means, and the input dimensions that vary at all: a constant one (a dead feature) gets a zero
 * weight whatever the fit, so it is left out of the systems.
 */
function inputStatistics(used: readonly TextImageSample[], d: number, k: number, colourWeight: number): { meanZ: Float64Array; meanT: Float64Array; active: number[] } {
  const n = used.length;
  const meanZ = new Float64Array(d);
  const meanT = new Float64Array(k);
  const low = new Float64Array(d).fill(Infinity);
  const high = new Float64Array(d).fill(-Infinity);
  const z = new Float64Array(d);
  for (const s of used) {
    inputInto(z, s.image, s.colour, colourWeight);
    for (let j = 0; j < d; j++) {
      const v = z[j]!;
      meanZ[j] = meanZ[j]! + v;
      if (v < low[j]!) low[j] = v;
      if (v > high[j]!) high[j] = v;
    }
    for (let t = 0; t < k; t++) meanT[t] = meanT[t]! + s.text[t]!;
  }
  for (let j = 0; j < d; j++) meanZ[j] = meanZ[j]! / n;
  for (let t = 0; t < k; t++) meanT[t] = meanT[t]! / n;
  const active: number[] = [];
  for (let j = 0; j < d; j++) if (high[j]! > low[j]!) active.push(j);
  return { meanZ, meanT, active };
}

/** Centred targets, one row per text dimension (k x n), and their sum of squares. */
function centredTargets(used: readonly TextImageSample[], meanT: Float64Array, k: number): { yt: Float64Array; targetSquares: number } {
  const n = used.length;
  const yt = new Float64Array(k * n);
  let targetSquares = 0;
  used.forEach((s, r) => {
    for (let t = 0; t < k; t++) {
      const v = s.text[t]! - meanT[t]!;
      yt[t * n + r] = v;
      targetSquares += v * v;
    }
  });
  return { yt, targetSquares };
}

/**
 * Step 1, in the primal (da x da) form when there are at least as many samples as varying inputs,
 * else in the dual (n x n) form. `yt` is overwritten in the dual form.
 */
function ridge(
  used: readonly TextImageSample[],
  fit: { meanZ: Float64Array; active: number[]; colourWeight: number; lambda: number; yt: Float64Array; k: number },
  wantResiduals: boolean,
): { wt: Float64Array; rr: Float64Array; residuals: Float64Array | undefined } {
  const { meanZ, active, colourWeight, lambda, yt, k } = fit;
  const n = used.length;
  const da = active.length;
  // Centred varying inputs: X (n x da) stored by rows (bySample) or by columns (X^T, da x n).
  const centredInputs = (bySample: boolean) => {
    const mat = new Float64Array(n * da);
    const z = new Float64Array(meanZ.length);
    used.forEach((s, r) => {
      inputInto(z, s.image, s.colour, colourWeight);
      for (let c = 0; c < da; c++) mat[bySample ? r * da + c : c * n + r] = z[active[c]!]! - meanZ[active[c]!]!;
    });
    return mat;
  };
  if (da === 0) return { wt: new Float64Array(0), rr: rowDots(yt, k, n), residuals: yt };
  if (n >= da) {
    // Primal: (X^T X + lambda I) W = X^T Y.
    const xt = centredInputs(false);
    const a = rowDots(xt, da, n);
    for (let c = 0; c < da; c++) a[c * da + c] = a[c * da + c]! + lambda;
    const bt = rowDots(yt, k, n, xt, da); // (X^T Y)^T
    const wt = new Float64Array(bt);
    choleskyInPlace(a, da);
    choleskySolveRowsInPlace(a, da, wt, k);
    // R^T R = Y^T Y - W^T X^T Y - lambda W^T W, because X^T X W = X^T Y - lambda W.
    const rr = rowDots(yt, k, n);
    const wb = rowDots(wt, k, da, bt, k);
    const ww = rowDots(wt, k, da);
    for (let i = 0; i < k * k; i++) rr[i] = rr[i]! - wb[i]! - lambda * ww[i]!;
    let residuals: Float64Array | undefined;
    if (wantResiduals) {
      residuals = rowDots(wt, k, da, transpose(xt, da, n), n);
      for (let i = 0; i < k * n; i++) residuals[i] = yt[i]! - residuals[i]!;
    }
    return { wt, rr, residuals };
  }
  // Dual: (X X^T + lambda I) A = Y, W = X^T A; the residuals Y - X X^T A are lambda A.
  const xr = centredInputs(true);
  const g = rowDots(xr, n, da);
  for (let r = 0; r < n; r++) g[r * n + r] = g[r * n + r]! + lambda;
  choleskyInPlace(g, n);
  const at = yt; // A^T (k x n), solved in place
  choleskySolveRowsInPlace(g, n, at, k);
  const wt = rowDots(at, k, n, transpose(xr, n, da), da);
  const rr = rowDots(at, k, n);
  for (let i = 0; i < k * k; i++) rr[i] = rr[i]! * lambda * lambda;
  return { wt, rr, residuals: wantResiduals ? at.map((v) => v * lambda) : undefined };
}

/** [W^T | alpha^T], row by row (k x (da + m)). */
function joinColumns(wt: Float64Array, da: number, alphaT: Float64Array, m: number, k: number): Float64Array {
  const joined = new Float64Array(k * (da + m));
  for (let t = 0; t < k; t++) {
    joined.set(wt.subarray(t * da, (t + 1) * da), t * (da + m));
    joined.set(alphaT.subarray(t * m, (t + 1) * m), t * (da + m) + da);
  }
  return joined;
}

/** Step 4: W^T <- (I - u u^T) W^T, u the unit mean text vector. */
function projectOutInPlace(wt: Float64Array, meanT: Float64Array, k: number, columns: number): void {
  const norm = Math.hypot(...meanT);
  if (norm <= 1e-9) return;
  const u = meanT.map((v) => v / norm);
  for (let c = 0; c < columns; c++) {
    let p = 0;
    for (let t = 0; t < k; t++) p += u[t]! * wt[t * columns + c]!;
    for (let t = 0; t < k; t++) wt[t * columns + c] = wt[t * columns + c]! - p * u[t]!;
  }
}

/**
 * apply(z) = W^T (z - mean z) + alpha^T (k(z') - mean k) = W^T z + alpha^T k(z') + bias, as stored:
 * the colour rows take the colour weight in.
 */
function mapWeights(
  wt: Float64Array,
  fit: { active: number[]; meanZ: Float64Array; di: number; d: number; k: number; colourWeight: number; kernel: KernelFit | undefined },
): Pick<MapParts, "weights" | "bias" | "kernelParts"> {
  const { active, meanZ, di, d, k, colourWeight, kernel } = fit;
  const da = active.length;
  const m = kernel?.kernel.count ?? 0;
  const columns = da + m;
  const weights = new Float32Array(d * k);
  const kernelWeights = new Float32Array(m * k);
  const bias = new Float64Array(k);
  for (let c = 0; c < columns; c++) {
    for (let t = 0; t < k; t++) {
      const v = wt[t * columns + c]!;
      if (c < da) {
        const j = active[c]!;
        bias[t] = bias[t]! - meanZ[j]! * v;
        weights[j * k + t] = v * (j < di ? 1 : colourWeight);
      } else {
        bias[t] = bias[t]! - kernel!.meanKernel[c - da]! * v;
        kernelWeights[(c - da) * k + t] = v;
      }
    }
  }
  return { weights, bias: Float32Array.from(bias), ...(kernel ? { kernelParts: { columns: kernel.kernel.columns, weights: kernelWeights } } : {}) };
}

function checkKernelOptions({ landmarks, bandwidth, colourWeight, lambda }: KernelOptions): void {
  if (!(lambda > 0) || !Number.isFinite(lambda)) throw new RangeError(`kernel.lambda must be a positive number, got ${lambda}`);
  if (!Number.isInteger(landmarks) || landmarks < 1) throw new RangeError(`kernel.landmarks must be a positive integer, got ${landmarks}`);
  if (!(bandwidth > 0) || !Number.isFinite(bandwidth)) throw new RangeError(`kernel.bandwidth must be a positive number, got ${bandwidth}`);
  if (!(colourWeight >= 0) || !Number.isFinite(colourWeight)) throw new RangeError(`kernel.colourWeight must be >= 0, got ${colourWeight}`);
}

/**
 * S W^T with S = (C + w mean(diag C) I)^-1, C = R^T R / n the residual covariance. Unchanged when
 * the photos predict the texts (all but) perfectly: the residuals are then rounding noise, with
 * nothing to learn from them.
 */
function whiten(wt: Float64Array, rr: Float64Array, targetSquares: number, n: number, k: number, da: number, whitening: number): Float64Array {
  let residual = 0;
  for (let t = 0; t < k; t++) residual += rr[t * k + t]!;
  if (!(residual > 1e-9 * targetSquares) || !Number.isFinite(residual)) return wt;
  const c = new Float64Array(k * k);
  for (let i = 0; i < k * k; i++) c[i] = rr[i]! / n;
  const ridge = (whitening * residual) / n / k;
  for (let t = 0; t < k; t++) c[t * k + t] = c[t * k + t]! + ridge;
  try {
    choleskyInPlace(c, k);
  } catch {
    return wt; // not positive definite: cancellation in R^T R swamped the regulariser
  }
  const w = transpose(wt, k, da); // each row: one input dimension's k weights
  choleskySolveRowsInPlace(c, k, w, da);
  return transpose(w, da, k);
}

/** Reads a map written by toBytes(); the result applies exactly as the map that wrote it. */
export function textImageMapFromBytes(bytes: Buffer): TextImageMap {
  if (bytes.length < 12) throw new Error("text-image map: too short");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new Error("text-image map: bad magic");
  const format = view.getUint32(4, true);
  if (format !== 1 && format !== 2 && format !== FORMAT) throw new Error(`text-image map: unsupported format ${format}`);
  const headerLength = view.getUint32(8, true);
  const headerEnd = 12 + headerLength;
  if (headerEnd > bytes.length) throw new Error("text-image map: truncated header");
  const header = JSON.parse(bytes.subarray(12, headerEnd).toString("utf8")) as MapHeader;
  const { imageDimensions: di, colourDimensions: dc, outputDimensions: k } = header;
  for (const v of [di, dc, k, header.trainedOn]) if (!Number.isInteger(v) || v < 0) throw new Error("text-image map: bad header");
  const start = align4(headerEnd);
  const weightCount = (di + dc) * k;
  const m = header.kernel?.landmarks ?? 0;
  if (!Number.isInteger(m) || m < 0 || (header.kernel && !(header.kernel.gamma > 0))) throw new Error("text-image map: bad kernel header");
  const kernelCount = m * (di + dc) + m * k;
  const words = header.prototypeWords ?? [];
  if (!Array.isArray(words) || words.some((w) => typeof w !== "string")) throw new Error("text-image map: bad prototype words");
  const prototypeCount = words.length * k;
  if (bytes.length !== start + 4 * (weightCount + k + kernelCount + prototypeCount)) throw new Error("text-image map: wrong length");
  const floats = (offset: number, count: number) => {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(start + 4 * (offset + i), true);
    return out;
  };
  const weights = floats(0, weightCount);
  const bias = floats(weightCount, k);
  const kernelParts = header.kernel
    ? { columns: floats(weightCount + k, m * (di + dc)), weights: floats(weightCount + k + m * (di + dc), m * k) }
    : undefined;
  const prototypes = words.length > 0 ? floats(weightCount + k + kernelCount, prototypeCount) : undefined;
  return makeMap({ ...header, weights, bias, kernelParts, ...(prototypes ? { prototypes } : {}) });
}

/** z = [image | colourWeight * colour]; the kernel's input z' is the same with its own colour weight. */
function inputInto(z: Float64Array, image: Float32Array, colour: Float32Array, colourWeight: number): void {
  z.set(image);
  for (let j = 0; j < colour.length; j++) z[image.length + j] = colourWeight * colour[j]!;
}

function makeMap(parts: MapParts): TextImageMap {
  const { imageDimensions: di, colourDimensions: dc, outputDimensions: k, weights, bias } = parts;
  // The bytes name the map; they are written again when asked for rather than kept (megabytes).
  const bytes = serialise(parts);
  let kernel: { landmarks: LandmarkKernel; weights: Float32Array; colourWeight: number; input: Float64Array; values: Float64Array } | undefined;
  if (parts.kernel && parts.kernelParts) {
    const m = parts.kernel.landmarks;
    kernel = {
      landmarks: landmarkKernel(parts.kernelParts.columns, m, di + dc, parts.kernel.gamma),
      weights: parts.kernelParts.weights,
      colourWeight: parts.kernel.colourWeight,
      input: new Float64Array(di + dc),
      values: new Float64Array(m),
    };
  }
  const version = `${parts.recipe ?? "ridge1"}-n${parts.trainedOn}-${fnv1a(bytes)}`;
  const prototypes = parts.prototypeWords && parts.prototypes ? prototypeIndex(parts.prototypeWords, parts.prototypes, k) : undefined;
  return {
    inputDimensions: di + dc,
    outputDimensions: k,
    trainedOn: parts.trainedOn,
    version,
    apply(imageFeatures: Float32Array, colour: Float32Array): Float32Array {
      if (imageFeatures.length !== di || colour.length !== dc) {
        throw new RangeError(`text-image map: expects ${di} image and ${dc} colour values, got ${imageFeatures.length} and ${colour.length}`);
      }
      const out = new Float64Array(bias);
      addRows(out, imageFeatures, weights, 0, k);
      addRows(out, colour, weights, di, k);
      if (kernel) {
        inputInto(kernel.input, imageFeatures, colour, kernel.colourWeight);
        kernel.landmarks.evaluate(kernel.input, kernel.values);
        addRows(out, kernel.values, kernel.weights, 0, k);
      }
      return unitOutput(out);
    },
    queryVisual: (query, words) => (prototypes ? queryWithPrototypes(query, words, prototypes) : words),
    toBytes: () => serialise(parts),
  };
}

/** out += sum_j input[j] * weights[(rowOffset + j), :] */
function addRows(out: Float64Array, input: Float32Array | Float64Array, weights: Float32Array, rowOffset: number, k: number): void {
  for (let j = 0; j < input.length; j++) {
    const v = input[j]!;
    if (v === 0) continue;
    const o = (rowOffset + j) * k;
    for (let t = 0; t < k; t++) out[t] = out[t]! + v * weights[o + t]!;
  }
}

function serialise(parts: MapParts): Buffer {
  const headerFields: MapHeader = {
    recipe: parts.recipe,
    imageDimensions: parts.imageDimensions,
    colourDimensions: parts.colourDimensions,
    outputDimensions: parts.outputDimensions,
    trainedOn: parts.trainedOn,
    lambda: parts.lambda,
    colourWeight: parts.colourWeight,
    whitening: parts.whitening,
    removeMeanDirection: parts.removeMeanDirection,
    ...(parts.kernel ? { kernel: parts.kernel } : {}),
    ...(parts.prototypeWords && parts.prototypes ? { prototypeWords: parts.prototypeWords } : {}),
  };
  const header = Buffer.from(JSON.stringify(headerFields), "utf8");
  const start = align4(12 + header.length);
  const kernel = parts.kernel ? parts.kernelParts : undefined;
  const prototypes = parts.prototypeWords && parts.prototypes ? parts.prototypes : undefined;
  const floats = [parts.weights, parts.bias, ...(kernel ? [kernel.columns, kernel.weights] : []), ...(prototypes ? [prototypes] : [])];
  const out = Buffer.alloc(start + 4 * floats.reduce((s, f) => s + f.length, 0));
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(prototypes ? FORMAT : kernel ? 2 : 1, 4);
  out.writeUInt32LE(header.length, 8);
  header.copy(out, 12);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let offset = start;
  for (const f of floats) {
    for (const v of f) {
      view.setFloat32(offset, v, true);
      offset += 4;
    }
  }
  return out;
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

/** FNV-1a (32-bit) of the bytes, as 8 hex digits: names the weights, not a security hash. */
function fnv1a(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}
