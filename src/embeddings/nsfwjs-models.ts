// nsfwjs 4.3.0 ships its MobileNetV2 (a Keras model converted for tfjs-layers: ImageNet backbone,
// NSFW head) not as model.json + .bin but as CommonJS modules under dist/models/mobilenet_v2/:
// model.min.js exports { modelTopology, weightsManifest } and group1-shard1of1.min.js the weight
// shard as a base64 string (uint8-quantised, 2.6 MB). Both are read here; nothing is downloaded.
// Its InceptionV3 (dist/models/inception_v3/, six shards, 22 MB) is laid out alike and read the
// same way (the quality image model: onnx-inception.ts, feature-engines.ts).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { io } from "@tensorflow/tfjs-core";

/** The nsfwjs release whose weights the image encoder's version string names. */
export const NSFWJS_VERSION = "4.3.0";

export interface KerasLayer {
  name: string;
  class_name: string;
  config: Record<string, unknown>;
  /** [[[inboundLayerName, nodeIndex, tensorIndex, kwargs], ...]] */
  inbound_nodes: [string, number, number, unknown][][];
}

export interface KerasModelJson {
  modelTopology: { model_config: { config: { layers: KerasLayer[] } } } & Record<string, unknown>;
  weightsManifest: io.WeightsManifestConfig;
}

export interface NsfwjsBundle {
  json: KerasModelJson;
  /** The weight shards concatenated, as tfjs expects them (still quantised). */
  weights: ArrayBuffer;
}

export interface WeightTensor {
  shape: number[];
  values: Float32Array;
}

const require = createRequire(import.meta.url);

function packageRoot(): string {
  // nsfwjs's "exports" map hides package.json and dist/models; its CommonJS entry is
  // <root>/dist/cjs/index.js.
  return path.resolve(path.dirname(require.resolve("nsfwjs")), "..", "..");
}

/** One of the Keras models under nsfwjs's dist/models/, with its weight shards concatenated. */
export function readNsfwjsModel(name: "mobilenet_v2" | "inception_v3"): NsfwjsBundle {
  const root = packageRoot();
  const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
  if (version !== NSFWJS_VERSION) {
    // Other weights would silently change every stored vector under the same version string.
    throw new Error(
      `nsfwjs ${version} is installed but the image encoder is built for ${NSFWJS_VERSION}; ` +
        `install nsfwjs@${NSFWJS_VERSION}, or update NSFWJS_VERSION and the image encoder's version string`,
    );
  }
  const dir = path.join(root, "dist", "models", name);
  const json = requireOnce(path.join(dir, "model.min.js")) as KerasModelJson;
  const shards: Buffer[] = [];
  for (const group of json.weightsManifest) {
    for (const p of group.paths) shards.push(Buffer.from(requireOnce(path.join(dir, `${p}.min.js`)) as string, "base64"));
  }
  const all = Buffer.concat(shards);
  return { json, weights: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer };
}

// The modules are read once at load; dropping them from require's cache frees the 3.5 MB base64
// string and the topology once the weights are on the backend.
function requireOnce(file: string): unknown {
  const resolved = require.resolve(file);
  try {
    return require(resolved) as unknown;
  } finally {
    delete require.cache[resolved];
  }
}

/**
 * The bundle's weights by name ("conv2d_1/kernel"), dequantised to float32 as tfjs's io.decodeWeights
 * does (v * scale + min), in Keras's layout.
 */
export function decodeWeights(json: KerasModelJson, weights: ArrayBuffer): Map<string, WeightTensor> {
  const out = new Map<string, WeightTensor>();
  let offset = 0;
  for (const spec of json.weightsManifest.flatMap((g) => g.weights)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const q = spec.quantization;
    if (spec.dtype !== "float32") throw new Error(`${spec.name}: ${spec.dtype} weights unsupported`);
    let values: Float32Array;
    if (!q) {
      values = new Float32Array(weights.slice(offset, offset + size * 4));
      offset += size * 4;
    } else if (q.dtype === "uint8" || q.dtype === "uint16") {
      const bytes = q.dtype === "uint8" ? 1 : 2;
      const quantised = q.dtype === "uint8" ? new Uint8Array(weights, offset, size) : new Uint16Array(weights.slice(offset, offset + size * 2));
      offset += size * bytes;
      const { scale, min } = q as { scale: number; min: number };
      values = new Float32Array(size);
      for (let i = 0; i < size; i++) values[i] = quantised[i]! * scale + min;
    } else {
      throw new Error(`${spec.name}: ${q.dtype} quantisation unsupported`);
    }
    out.set(spec.name, { shape: spec.shape, values });
  }
  if (offset !== weights.byteLength) throw new Error(`the weight shards hold ${weights.byteLength} bytes, the manifest ${offset}`);
  return out;
}

/**
 * An inference-mode BatchNormalization folded into the convolution before it:
 * y = gamma (conv(x) + b - mean) / sqrt(var + eps) + beta  ==  conv'(x) + b', with the kernel's
 * output channels scaled by s = gamma / sqrt(var + eps) and b' = (b - mean) s + beta. Float32
 * throughout, rounded in the order tfjs's kernels used when MobileNet's stored vectors were made.
 */
export function foldBatchNorm(
  kernel: WeightTensor,
  bias: WeightTensor | undefined,
  bn: KerasLayer,
  raw: Map<string, WeightTensor>,
  depthwise: boolean,
): [WeightTensor, WeightTensor] {
  const f = Math.fround;
  const mean = raw.get(`${bn.name}/moving_mean`)?.values;
  const variance = raw.get(`${bn.name}/moving_variance`)?.values;
  if (!mean || !variance) throw new Error(`${bn.name}: moving statistics missing`);
  const gamma = raw.get(`${bn.name}/gamma`)?.values;
  const beta = raw.get(`${bn.name}/beta`)?.values;
  const eps = f(bn.config.epsilon as number);
  const channels = mean.length;
  const scale = new Float32Array(channels);
  for (let c = 0; c < channels; c++) scale[c] = f((gamma ? gamma[c]! : 1) / f(Math.sqrt(f(variance[c]! + eps))));
  // Output channel of a [h, w, in, out] kernel is the last index; of a depthwise [h, w, in, m]
  // kernel it is in * m + m', which is again the flat index modulo in * m.
  const [, , inChannels, multiplier] = kernel.shape as [number, number, number, number];
  const period = depthwise ? inChannels * multiplier : multiplier;
  if (period !== channels) throw new Error(`${bn.name}: ${channels} channels after a kernel of shape ${kernel.shape.join("x")}`);
  const scaled = new Float32Array(kernel.values.length);
  for (let i = 0; i < scaled.length; i++) scaled[i] = f(kernel.values[i]! * scale[i % period]!);
  const folded = new Float32Array(channels);
  for (let c = 0; c < channels; c++) {
    folded[c] = f(f(f((bias ? bias.values[c]! : 0) - mean[c]!) * scale[c]!) + (beta ? beta[c]! : 0));
  }
  return [
    { shape: kernel.shape, values: scaled },
    { shape: [channels], values: folded },
  ];
}
