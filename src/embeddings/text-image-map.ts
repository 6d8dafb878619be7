// A linear map from a product photo's features into the text space, so that a text query can be
// compared with products that have no words of their own (zero-shot), learned from the catalog's own
// (photo, descriptor) pairs. There is no joint text/image model to be had offline here; this learns
// one side of it: closed-form ridge regression from [image features | w * colour profile] to the
// descriptor's sentence vector.
//
// Pure and dependency-free (Float64 arithmetic, Cholesky solve). The fit solves the primal (d x d)
// system when the samples outnumber the input dimensions, else the dual (n x n) one.
import { choleskyInPlace, choleskySolveInPlace, gramOfRows, multiplyTransposedLeft, transpose } from "./linear-algebra.js";

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
  /** Ridge penalty on the (centred) weights, in units of one unit-length sample. */
  lambda?: number;
  /** Scale of the colour profile next to the unit-length image features. */
  colourWeight?: number;
  /** experiment */
  output?: "mean" | "centred" | "pc1";
}

export const DEFAULT_LAMBDA = 1;
export const DEFAULT_COLOUR_WEIGHT = 1;

const MAGIC = 0x4d495456; // "VTIM" little-endian
const FORMAT = 1;

interface MapParts {
  imageDimensions: number;
  colourDimensions: number;
  outputDimensions: number;
  trainedOn: number;
  lambda: number;
  colourWeight: number;
  /** (image + colour) x output, row-major, colour rows already scaled by colourWeight. */
  weights: Float32Array;
  /** Added to every output before normalisation. */
  bias: Float32Array;
}

export function fitTextImageMap(samples: readonly TextImageSample[], options: FitTextImageMapOptions = {}): TextImageMap {
  const lambda = options.lambda ?? DEFAULT_LAMBDA;
  const colourWeight = options.colourWeight ?? DEFAULT_COLOUR_WEIGHT;
  if (!(lambda > 0) || !Number.isFinite(lambda)) throw new RangeError(`lambda must be a positive number, got ${lambda}`);
  if (!(colourWeight >= 0) || !Number.isFinite(colourWeight)) throw new RangeError(`colourWeight must be >= 0, got ${colourWeight}`);
  const first = samples[0];
  if (!first) throw new RangeError("fitTextImageMap: no samples");
  const di = first.image.length, dc = first.colour.length, k = first.text.length;
  for (const s of samples) {
    if (s.image.length !== di || s.colour.length !== dc || s.text.length !== k) {
      throw new RangeError(`fitTextImageMap: samples differ in dimensions (${s.image.length}/${s.colour.length}/${s.text.length} vs ${di}/${dc}/${k})`);
    }
  }
  const used = samples.filter((s) => s.text.some((v) => v !== 0));
  const n = used.length;
  if (n === 0) throw new RangeError("fitTextImageMap: every sample has an all-zero text vector");
  const d = di + dc;

  // Centred inputs X (n x d) and targets Y (n x k): the intercept is then the means, unpenalised.
  const x = new Float64Array(n * d);
  const y = new Float64Array(n * k);
  const meanX = new Float64Array(d);
  const meanY = new Float64Array(k);
  used.forEach((s, r) => {
    const o = r * d;
    for (let j = 0; j < di; j++) x[o + j] = s.image[j]!;
    for (let j = 0; j < dc; j++) x[o + di + j] = colourWeight * s.colour[j]!;
    for (let t = 0; t < k; t++) y[r * k + t] = s.text[t]!;
  });
  columnMeans(x, n, d, meanX);
  columnMeans(y, n, k, meanY);
  subtractRowVector(x, n, d, meanX);
  subtractRowVector(y, n, k, meanY);

  let w: Float64Array; // d x k
  if (n >= d) {
    // Primal: (X^T X + lambda I) W = X^T Y
    const a = gramOfRows(transpose(x, n, d), d, n);
    for (let i = 0; i < d; i++) a[i * d + i] = a[i * d + i]! + lambda;
    w = multiplyTransposedLeft(x, y, n, d, k);
    choleskyInPlace(a, d);
    choleskySolveInPlace(a, d, w, k);
  } else {
    // Dual: (X X^T + lambda I) A = Y, W = X^T A
    const g = gramOfRows(x, n, d);
    for (let i = 0; i < n; i++) g[i * n + i] = g[i * n + i]! + lambda;
    choleskyInPlace(g, n);
    choleskySolveInPlace(g, n, y, k);
    w = multiplyTransposedLeft(x, y, n, d, k);
  }

  // apply(z) = W^T (z - meanX) + meanY = W^T z + bias
  const bias = new Float64Array(options.output === "centred" ? new Float64Array(k) : meanY);
  for (let j = 0; j < d; j++) {
    const mj = meanX[j]!;
    if (mj === 0) continue;
    for (let t = 0; t < k; t++) bias[t] = bias[t]! - mj * w[j * k + t]!;
  }
  // Colour rows take the colour weight in, so apply() gets the raw profile.
  for (let j = di; j < d; j++) for (let t = 0; t < k; t++) w[j * k + t] = w[j * k + t]! * colourWeight;

  return makeMap({
    imageDimensions: di,
    colourDimensions: dc,
    outputDimensions: k,
    trainedOn: n,
    lambda,
    colourWeight,
    weights: Float32Array.from(w),
    bias: Float32Array.from(bias),
  });
}

export function textImageMapFromBytes(bytes: Buffer): TextImageMap {
  if (bytes.length < 12) throw new Error("text-image map: too short");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new Error("text-image map: bad magic");
  const format = view.getUint32(4, true);
  if (format !== FORMAT) throw new Error(`text-image map: unsupported format ${format}`);
  const headerLength = view.getUint32(8, true);
  const headerEnd = 12 + headerLength;
  if (headerEnd > bytes.length) throw new Error("text-image map: truncated header");
  const header = JSON.parse(bytes.subarray(12, headerEnd).toString("utf8")) as Omit<MapParts, "weights" | "bias">;
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

function makeMap(parts: MapParts): TextImageMap {
  const { imageDimensions: di, colourDimensions: dc, outputDimensions: k, weights, bias } = parts;
  const bytes = serialise(parts);
  const version = `ridge1-n${parts.trainedOn}-${fnv1a(bytes)}`;
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
  const header = Buffer.from(
    JSON.stringify({
      imageDimensions: parts.imageDimensions,
      colourDimensions: parts.colourDimensions,
      outputDimensions: parts.outputDimensions,
      trainedOn: parts.trainedOn,
      lambda: parts.lambda,
      colourWeight: parts.colourWeight,
    }),
    "utf8",
  );
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

function columnMeans(m: Float64Array, rows: number, cols: number, out: Float64Array): void {
  for (let r = 0; r < rows; r++) for (let c = 0, o = r * cols; c < cols; c++) out[c] = out[c]! + m[o + c]!;
  for (let c = 0; c < cols; c++) out[c] = out[c]! / rows;
}

function subtractRowVector(m: Float64Array, rows: number, cols: number, v: Float64Array): void {
  for (let r = 0; r < rows; r++) for (let c = 0, o = r * cols; c < cols; c++) m[o + c] = m[o + c]! - v[c]!;
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
