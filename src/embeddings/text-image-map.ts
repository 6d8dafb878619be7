// A linear map from a product photo's features into the text space, so that a text query can be
// compared with products that have no words of their own (zero-shot), learned from the catalog's own
// (photo, descriptor) pairs. There is no joint text/image model to be had offline here; this learns
// one side of it: closed-form ridge regression from [image features | w * colour profile] to the
// descriptor's sentence vector, then two fixed adjustments of the output (see fitTextImageMap).
//
// Pure and dependency-free (Float64 arithmetic, Cholesky solves). The fit solves the primal
// (d x d) system when the samples outnumber the input dimensions, else the dual (n x n) one.
import { choleskyInPlace, choleskySolveRowsInPlace, rowDots, transpose } from "./linear-algebra.js";

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
  toBytes(): Buffer;
}

export interface TextImageSample {
  image: Float32Array;
  colour: Float32Array;
  /** The descriptor's text vector; an all-zero one (no known word) makes the sample count for nothing. */
  text: Float32Array;
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
}

// Measured on fashion-dev (bench/eval.ts): zero-shot type F1 peaks at lambda 0.1-0.3 for 282 to
// 1128 training pairs alike; larger lambda trades type for colour precision.
export const DEFAULT_LAMBDA = 0.3;
export const DEFAULT_COLOUR_WEIGHT = 1;
export const DEFAULT_WHITENING = 0.3;

const MAGIC = 0x4d495456; // "VTIM" little-endian
const FORMAT = 1;
/**
 * Names the fitting recipe; stored in every map and part of its version. "ridge1" (maps stored
 * without a recipe) kept the mean text vector in the outputs and neither whitened nor removed the
 * mean direction: a caller may refit maps whose version does not start with this.
 */
export const TEXT_IMAGE_MAP_RECIPE = "ridge2";

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
}

interface MapParts extends MapHeader {
  /** (image + colour) x output, row-major, colour rows already scaled by colourWeight. */
  weights: Float32Array;
  /** Added to every output before normalisation. */
  bias: Float32Array;
}

/**
 * Fits the map on (photo, descriptor) pairs; samples whose text vector is all zero are skipped.
 *   1. Ridge regression, centred, from z = [image | colourWeight * colour] to the text vector t:
 *      W = argmin sum |(t - mean t) - W^T (z - mean z)|^2 + lambda |W|^2, solved in the primal
 *      (d x d) form when there are at least as many samples as varying input dimensions, else in
 *      the dual (n x n) form. The outputs are thus centred: a photo's offset from the average
 *      product. (Keeping the mean makes every photo lean towards the type names that resemble the
 *      average title: zero-shot type F1 0.20 instead of 0.52 for plain ridge on fashion-dev.)
 *   2. Residual whitening: W <- W S, S = (C + w mean(diag C) I)^-1, C the covariance of the
 *      training residuals, so that directions of the text space a photo does not predict (brand
 *      names, mostly) weigh less in a text query's dot product with the output.
 *   3. The catalog's mean text direction projected out of the outputs, as SIF removes the common
 *      direction of sentences: ranking by q . out is then ranking by (q - mean t) . out.
 * apply(z) = normalise(W^T (z - mean z)).
 */
export function fitTextImageMap(samples: readonly TextImageSample[], options: FitTextImageMapOptions = {}): TextImageMap {
  const lambda = options.lambda ?? DEFAULT_LAMBDA;
  const colourWeight = options.colourWeight ?? DEFAULT_COLOUR_WEIGHT;
  const whitening = options.whitening ?? DEFAULT_WHITENING;
  const removeMeanDirection = options.removeMeanDirection ?? true;
  if (!(lambda > 0) || !Number.isFinite(lambda)) throw new RangeError(`lambda must be a positive number, got ${lambda}`);
  if (!(colourWeight >= 0) || !Number.isFinite(colourWeight)) throw new RangeError(`colourWeight must be >= 0, got ${colourWeight}`);
  if (whitening !== false && (!(whitening > 0) || !Number.isFinite(whitening))) {
    throw new RangeError(`whitening must be a positive number or false, got ${whitening}`);
  }
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
  const n = used.length;
  if (n === 0) throw new RangeError("fitTextImageMap: every sample has an all-zero text vector");
  const d = di + dc;

  // Means, and the input dimensions that vary at all: a constant one (a dead feature) gets a zero
  // weight whatever the fit, so it is left out of the systems.
  const meanZ = new Float64Array(d);
  const meanT = new Float64Array(k);
  const low = new Float64Array(d).fill(Infinity);
  const high = new Float64Array(d).fill(-Infinity);
  const z = new Float64Array(d);
  for (const s of used) {
    inputInto(z, s, di, dc, colourWeight);
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
  const da = active.length;

  // Centred targets, one row per text dimension (k x n).
  const yt = new Float64Array(k * n);
  let targetSquares = 0;
  used.forEach((s, r) => {
    for (let t = 0; t < k; t++) {
      const v = s.text[t]! - meanT[t]!;
      yt[t * n + r] = v;
      targetSquares += v * v;
    }
  });
  // Centred varying inputs: X (n x da) stored by rows (bySample) or by columns (X^T, da x n).
  const centredInputs = (bySample: boolean) => {
    const m = new Float64Array(n * da);
    used.forEach((s, r) => {
      inputInto(z, s, di, dc, colourWeight);
      for (let c = 0; c < da; c++) m[bySample ? r * da + c : c * n + r] = z[active[c]!]! - meanZ[active[c]!]!;
    });
    return m;
  };

  // wt: the weights, transposed (k x da); rr: the residuals' sums of squares and products (k x k).
  let wt: Float64Array;
  let rr: Float64Array;
  if (da === 0) {
    wt = new Float64Array(0);
    rr = rowDots(yt, k, n);
  } else if (n >= da) {
    // Primal: (X^T X + lambda I) W = X^T Y.
    const xt = centredInputs(false);
    const a = rowDots(xt, da, n);
    for (let c = 0; c < da; c++) a[c * da + c] = a[c * da + c]! + lambda;
    const bt = rowDots(yt, k, n, xt, da); // (X^T Y)^T
    wt = new Float64Array(bt);
    choleskyInPlace(a, da);
    choleskySolveRowsInPlace(a, da, wt, k);
    // R^T R = Y^T Y - W^T X^T Y - lambda W^T W, because X^T X W = X^T Y - lambda W.
    rr = rowDots(yt, k, n);
    const wb = rowDots(wt, k, da, bt, k);
    const ww = rowDots(wt, k, da);
    for (let i = 0; i < k * k; i++) rr[i] = rr[i]! - wb[i]! - lambda * ww[i]!;
  } else {
    // Dual: (X X^T + lambda I) A = Y, W = X^T A; the residuals Y - X X^T A are lambda A.
    const x = centredInputs(true);
    const g = rowDots(x, n, da);
    for (let r = 0; r < n; r++) g[r * n + r] = g[r * n + r]! + lambda;
    choleskyInPlace(g, n);
    const at = yt; // A^T (k x n), solved in place
    choleskySolveRowsInPlace(g, n, at, k);
    wt = rowDots(at, k, n, transpose(x, n, da), da);
    rr = rowDots(at, k, n);
    for (let i = 0; i < k * k; i++) rr[i] = rr[i]! * lambda * lambda;
  }

  if (da > 0 && whitening !== false) wt = whiten(wt, rr, targetSquares, n, k, da, whitening);
  if (da > 0 && removeMeanDirection) {
    // W^T <- (I - u u^T) W^T, u the unit mean text vector.
    const norm = Math.hypot(...meanT);
    if (norm > 1e-9) {
      const u = meanT.map((v) => v / norm);
      for (let c = 0; c < da; c++) {
        let p = 0;
        for (let t = 0; t < k; t++) p += u[t]! * wt[t * da + c]!;
        for (let t = 0; t < k; t++) wt[t * da + c] = wt[t * da + c]! - p * u[t]!;
      }
    }
  }

  // apply(z) = W^T (z - mean z) = W^T z + bias; the colour rows take the colour weight in.
  const weights = new Float32Array(d * k);
  const bias = new Float64Array(k);
  for (let c = 0; c < da; c++) {
    const j = active[c]!;
    const scale = j < di ? 1 : colourWeight;
    for (let t = 0; t < k; t++) {
      const v = wt[t * da + c]!;
      bias[t] = bias[t]! - meanZ[j]! * v;
      weights[j * k + t] = v * scale;
    }
  }

  return makeMap({
    recipe: TEXT_IMAGE_MAP_RECIPE,
    imageDimensions: di,
    colourDimensions: dc,
    outputDimensions: k,
    trainedOn: n,
    lambda,
    colourWeight,
    whitening,
    removeMeanDirection,
    weights,
    bias: Float32Array.from(bias),
  });
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
  if (format !== FORMAT) throw new Error(`text-image map: unsupported format ${format}`);
  const headerLength = view.getUint32(8, true);
  const headerEnd = 12 + headerLength;
  if (headerEnd > bytes.length) throw new Error("text-image map: truncated header");
  const header = JSON.parse(bytes.subarray(12, headerEnd).toString("utf8")) as MapHeader;
  const { imageDimensions: di, colourDimensions: dc, outputDimensions: k } = header;
  for (const v of [di, dc, k, header.trainedOn]) if (!Number.isInteger(v) || v < 0) throw new Error("text-image map: bad header");
  const start = align4(headerEnd);
  const weightCount = (di + dc) * k;
  if (bytes.length !== start + 4 * (weightCount + k)) throw new Error("text-image map: wrong length");
  const weights = new Float32Array(weightCount);
  const bias = new Float32Array(k);
  for (let i = 0; i < weightCount; i++) weights[i] = view.getFloat32(start + 4 * i, true);
  for (let i = 0; i < k; i++) bias[i] = view.getFloat32(start + 4 * (weightCount + i), true);
  return makeMap({ ...header, weights, bias });
}

function inputInto(z: Float64Array, s: TextImageSample, di: number, dc: number, colourWeight: number): void {
  for (let j = 0; j < di; j++) z[j] = s.image[j]!;
  for (let j = 0; j < dc; j++) z[di + j] = colourWeight * s.colour[j]!;
}

function makeMap(parts: MapParts): TextImageMap {
  const { imageDimensions: di, colourDimensions: dc, outputDimensions: k, weights, bias } = parts;
  const bytes = serialise(parts);
  const version = `${parts.recipe ?? "ridge1"}-n${parts.trainedOn}-${fnv1a(bytes)}`;
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
      let norm = 0;
      for (let t = 0; t < k; t++) norm += out[t]! * out[t]!;
      norm = Math.sqrt(norm);
      const result = new Float32Array(k);
      if (norm > 0 && Number.isFinite(norm)) for (let t = 0; t < k; t++) result[t] = out[t]! / norm;
      return result;
    },
    toBytes: () => Buffer.from(bytes),
  };
}

/** out += sum_j input[j] * weights[(rowOffset + j), :] */
function addRows(out: Float64Array, input: Float32Array, weights: Float32Array, rowOffset: number, k: number): void {
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
  };
  const header = Buffer.from(JSON.stringify(headerFields), "utf8");
  const start = align4(12 + header.length);
  const out = Buffer.alloc(start + 4 * (parts.weights.length + parts.bias.length));
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(FORMAT, 4);
  out.writeUInt32LE(header.length, 8);
  header.copy(out, 12);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  parts.weights.forEach((v, i) => view.setFloat32(start + 4 * i, v, true));
  parts.bias.forEach((v, i) => view.setFloat32(start + 4 * (parts.weights.length + i), v, true));
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
