// The image encoder: MobileNetV2 (nsfwjs's ImageNet backbone) pooled features at 160x160.
// Measured on fashion photos: 160 px for type precision@10 0.353 against 0.367 at 224 px (at about
// half the cost); 128 px lost 0.025 zero-shot F1. Square-rooting the non-negative features (a
// Hellinger-style map) gains 0.02-0.03.
//
// Two runtimes run the same fused plan (mobilenet-plan.ts) on the same weights:
// - ONNX Runtime (onnxruntime-node's native CPU kernels), an optional dependency installed by
//   default: ~6.5 ms of inference per image on one core (its NCHWc layout optimisation: without
//   it, ~17 ms), the only way to the 20 ms-per-image target;
// - TensorFlow.js's wasm backend (or tfjs-node's native binding, if installed), the reference that
//   defines the model and the fallback when onnxruntime-node is absent or cannot load: ~30-45 ms,
//   nearly all of it in XNNPACK's wasm-SIMD convolutions (1x1: ~5 GMAC/s, depthwise: ~1.6).
// Their vectors agree to float rounding (cosine 1 - 1e-8), the same order of difference as ONNX
// Runtime's own on two CPUs (it picks kernels by AVX2/AVX-512), so they share one version: a
// deployment can switch runtime, or run workers on both, without re-embedding anything. Batching
// does not pay on either (measured: 0-10% per image, within noise) and one thread is the cheapest
// per image, so images go one by one.
import { createRequire } from "node:module";
import * as tf from "@tensorflow/tfjs-core";
import { COLOUR_SOURCE_SIZE, colourProfile, colourProfileOfSource } from "./colour-profile.js";
import { decodeRgb, rgbToChw } from "./decode-rgb.js";
import { fusedNetFromPlan } from "./fused-mobilenet.js";
import { planMobileNet } from "./mobilenet-plan.js";
import { NSFWJS_VERSION, readNsfwjsMobileNetV2 } from "./nsfwjs-mobilenet.js";
import { mobileNetToOnnx } from "./onnx-mobilenet.js";
import { createSerialQueue } from "./serial-queue.js";
import { SharedResource, type Lease } from "./shared-resource.js";
import { initTfBackend } from "./tf-backend.js";
import type { ImageEncoder } from "./types.js";
import { l2NormaliseInPlace } from "./vector-math.js";

export const IMAGE_INPUT_SIZE = 160;
export const IMAGE_DIMENSIONS = 1280;

/** Which library runs the model. */
export type ImageRuntime = "onnxruntime" | "tfjs";

const MODEL = `mnv2-nsfwjs${NSFWJS_VERSION.split(".").slice(0, 2).join(".")}`;
// Anything that changes the vectors beyond float rounding (weights, input size, resizing, pixel
// range, post-processing) must change this string: stored embeddings are only comparable under
// the same version. Both runtimes give it (see above); tests hold them to a cosine of 1 - 1e-6.
export const IMAGE_ENCODER_VERSION = `${MODEL}-fused-${IMAGE_INPUT_SIZE}-sqrt-v1`;

// A variable specifier: the package is optional, so neither TypeScript nor a bundler should try to
// resolve it.
const ORT_PACKAGE = "onnxruntime-node";
const require = createRequire(import.meta.url);

/** The runtime openImageEncoder tries first by default: ONNX Runtime when it is installed. */
export function defaultImageRuntime(): ImageRuntime {
  try {
    require.resolve(ORT_PACKAGE);
    return "onnxruntime";
  } catch {
    return "tfjs";
  }
}

export interface ImageBackendInfo {
  runtime: ImageRuntime;
  /** "onnxruntime", or the tfjs backend: "tensorflow" (tfjs-node) or "wasm". */
  name: "onnxruntime" | "tensorflow" | "wasm";
  /** wasm SIMD (tfjs's wasm backend only). */
  simd: boolean;
  initMs: number;
}

/** One loaded model: [n images of IMAGE_INPUT_SIZE^2 RGB bytes] -> n x 1280 pooled features. */
interface FeatureEngine {
  backend: ImageBackendInfo;
  features(rgb: Uint8Array): Promise<Float32Array>;
  dispose(): void | Promise<void>;
}

let backendLog: (msg: string) => void = () => undefined;

const engines = new SharedResource<FeatureEngine>(
  (runtime) => (runtime === "onnxruntime" ? openOnnxEngine() : openTfjsEngine(backendLog)),
  (engine) => engine.dispose(),
);

// One queue per process, not per encoder: every encoder shares the model (and, on tfjs, the
// backend), and a second image in flight would only raise peak memory.
const serial = createSerialQueue();

export interface OpenedImageEncoder extends ImageEncoder {
  readonly backend: ImageBackendInfo;
  close(): Promise<void>;
}

export interface OpenImageEncoderOptions {
  log?: (msg: string) => void;
  /** The one line saying the default runtime fell back to tfjs; default: log. */
  warn?: (msg: string) => void;
  /**
   * Default: ONNX Runtime if installed, else tfjs; an ONNX Runtime that fails to load falls back to
   * tfjs. A runtime asked for by name that cannot load is an error.
   */
  runtime?: ImageRuntime;
}

/** Loads the model on first use in the process; later opens share it until the last one closes. */
export async function openImageEncoder(opts: OpenImageEncoderOptions = {}): Promise<OpenedImageEncoder> {
  if (opts.log) backendLog = opts.log;
  const lease = await acquireEngine(opts.runtime, opts.warn ?? opts.log ?? (() => undefined));
  const engine = lease.value;
  let closed = false;
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(call: Promise<T>): Promise<T> => {
    inFlight.add(call);
    void call.then(
      () => inFlight.delete(call),
      () => inFlight.delete(call),
    );
    return call;
  };
  const vectorOf = (rgb: Uint8Array) => serial(() => engine.features(rgb)).then(toVector);
  // Decoding runs on libuv's threads, so it overlaps with other images' inference.
  const decode = (image: Buffer) => decodeRgb(image, IMAGE_INPUT_SIZE);
  const open = () => {
    if (closed) throw new Error("the image encoder is closed");
  };
  return {
    version: IMAGE_ENCODER_VERSION,
    dimensions: IMAGE_DIMENSIONS,
    backend: engine.backend,
    async encode(image: Buffer): Promise<Float32Array> {
      open();
      return track(decode(image).then(vectorOf));
    },
    async encodeWithColour(image: Buffer): Promise<{ image: Float32Array; colour: Float32Array }> {
      open();
      return track(
        decode(image).then(async (rgb) => {
          // One decode for both: the colour profile reads the model's input (see colour-profile.ts).
          const colour = COLOUR_SOURCE_SIZE === IMAGE_INPUT_SIZE ? colourProfileOfSource(rgb) : await colourProfile(image);
          return { image: await vectorOf(rgb), colour };
        }),
      );
    },
    async close() {
      closed = true;
      // Calls already made finish on the weights they started with.
      await Promise.allSettled([...inFlight]);
      await lease.release();
    },
  };
}

async function acquireEngine(runtime: ImageRuntime | undefined, warn: (msg: string) => void): Promise<Lease<FeatureEngine>> {
  // Asked for by name: a runtime that cannot load is an error, not a quiet change of speed and vectors.
  if (runtime) return engines.acquire(runtime);
  // Both fallbacks miss the embedding target, so each says so in one line.
  if (defaultImageRuntime() === "tfjs") {
    warn(`${ORT_PACKAGE} is not installed; the image model runs on tfjs, several times slower (install with ONNXRUNTIME_NODE_INSTALL=skip npm ci)`);
    return engines.acquire("tfjs");
  }
  try {
    return await engines.acquire("onnxruntime");
  } catch (err) {
    const reason = String(err).replace(/\s+/g, " ");
    warn(`${ORT_PACKAGE} is installed but cannot run the image model (${reason}); using tfjs, several times slower`);
    return engines.acquire("tfjs");
  }
}

function toVector(raw: Float32Array): Float32Array {
  const v = new Float32Array(IMAGE_DIMENSIONS);
  // Features are means of ReLU6 outputs, hence >= 0; the clamp only guards rounding.
  for (let i = 0; i < v.length; i++) v[i] = Math.sqrt(Math.max(0, raw[i]!));
  return l2NormaliseInPlace(v);
}

// Both engines feed [0, 1] pixels, as nsfwjs fed the model when fine-tuning it (not Keras's [-1, 1]).

async function openTfjsEngine(log: (msg: string) => void): Promise<FeatureEngine> {
  const t0 = performance.now();
  const info = await initTfBackend(log);
  const { json, weights } = readNsfwjsMobileNetV2();
  const net = fusedNetFromPlan(planMobileNet(json, weights));
  const size = IMAGE_INPUT_SIZE;
  // The first call compiles kernels and sizes the backend's buffers; pay for it at load.
  tf.dispose(net.predict(tf.zeros([1, size, size, 3])));
  return {
    backend: { runtime: "tfjs", name: info.name, simd: info.simd, initMs: performance.now() - t0 },
    async features(rgb) {
      // A plain loop: Float32Array.from with a map function took 12 ms here.
      const unit = new Float32Array(rgb.length);
      for (let i = 0; i < rgb.length; i++) unit[i] = rgb[i]! / 255;
      const out = tf.tidy(() => net.predict(tf.tensor4d(unit, [1, size, size, 3])));
      try {
        return (await out.data()) as Float32Array;
      } finally {
        out.dispose();
      }
    },
    dispose: () => net.dispose(),
  };
}

// The parts of onnxruntime-node's API used here (the package is optional, so not imported for types).
interface OrtTensor {
  readonly data: unknown;
}
interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
interface OrtModule {
  Tensor: new (type: "float32", data: Float32Array, dims: readonly number[]) => OrtTensor;
  InferenceSession: { create(model: Uint8Array, options: Record<string, unknown>): Promise<OrtSession> };
}

async function openOnnxEngine(): Promise<FeatureEngine> {
  const t0 = performance.now();
  const imported = (await import(ORT_PACKAGE)) as OrtModule & { default?: OrtModule };
  const ort = imported.InferenceSession ? imported : imported.default!;
  const { json, weights } = readNsfwjsMobileNetV2();
  const size = IMAGE_INPUT_SIZE;
  const session = await ort.InferenceSession.create(mobileNetToOnnx(planMobileNet(json, weights), size), {
    // One thread: the pipeline's unit is images per core, and a worker process already overlaps
    // decoding (libuv's threads) with inference. With 1 the kernels run on the calling thread
    // (the binding runs a session synchronously on Node's main thread) and no pool is started;
    // ORT's default would take every core. The inter-op pool is only used in parallel mode.
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    logSeverityLevel: 3,
  });
  const [input, output] = [session.inputNames[0]!, session.outputNames[0]!];
  const plane = size * size;
  const features = async (rgb: Uint8Array): Promise<Float32Array> => {
    const result = await session.run({ [input]: new ort.Tensor("float32", rgbToChw(rgb, size), [1, 3, size, size]) });
    return result[output]!.data as Float32Array;
  };
  // The first run plans memory and picks kernels; pay for it at load.
  await features(new Uint8Array(3 * plane));
  return {
    backend: { runtime: "onnxruntime", name: "onnxruntime", simd: false, initMs: performance.now() - t0 },
    features,
    dispose: () => session.release(),
  };
}
