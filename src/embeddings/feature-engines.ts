// The image networks, each loaded on one runtime as a FeatureEngine: decoded RGB bytes in, the
// network's pooled features out. image-encoder.ts chooses which networks and runtime a deployment
// runs and turns their features into a product's vector.
//
// - MobileNetV2 (nsfwjs's, 160 px, 1280 features): one fused plan (mobilenet-plan.ts) that both
//   runtimes build their forward pass from.
// - InceptionV3 (nsfwjs's, 224 px, 2048 features of `mixed10`): ONNX Runtime runs the graph
//   onnx-inception.ts writes; tfjs-layers reads the Keras file as it is (cut at mixed10), the
//   reference the graph is tested against.
// On both runtimes the pixels are [0, 1], as nsfwjs fed the models when fine-tuning them (not
// Keras's [-1, 1]).
import { mkdir, stat, unlink } from "node:fs/promises";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import * as tfl from "@tensorflow/tfjs-layers";
import { writeAtomically } from "./atomic-file.js";
import { rgbToChw } from "./decode-rgb.js";
import { fusedNetFromPlan } from "./fused-mobilenet.js";
import { planMobileNet } from "./mobilenet-plan.js";
import { NSFWJS_VERSION, readNsfwjsModel } from "./nsfwjs-models.js";
import { inceptionToOnnx } from "./onnx-inception.js";
import { mobileNetToOnnx } from "./onnx-mobilenet.js";
import { initTfBackend } from "./tf-backend.js";

/** Which library runs the models. */
export type ImageRuntime = "onnxruntime" | "tfjs";

export interface NetworkSpec {
  name: "mobilenet" | "inception";
  /** Square input side in pixels. */
  size: number;
  dimensions: number;
}

export const MOBILENET: NetworkSpec = { name: "mobilenet", size: 160, dimensions: 1280 };
// 224 px: 0.676 type precision@10 beside MobileNet against 0.641 at 160 px, at 34 ms against 20
// (README, "A second network beside MobileNet"); 299 px, the file's own size, costs 61 ms.
export const INCEPTION: NetworkSpec = { name: "inception", size: 224, dimensions: 2048 };
const INCEPTION_CUT = "mixed10";
// Names the cached InceptionV3 graph: change it whenever onnx-inception.ts would write other bytes.
const INCEPTION_GRAPH = `inception_v3-nsfwjs${NSFWJS_VERSION}-${INCEPTION_CUT}-${INCEPTION.size}-fold2.onnx`;

export interface FeatureEngineOptions {
  log: (msg: string) => void;
  /**
   * Where the InceptionV3 graph is kept once converted. Converting it in the process (five copies
   * of its 90 MB of weights on the way) left a worker 330 MB larger than one that hands ONNX
   * Runtime the file; without a directory it is converted in memory at every load.
   */
  cacheDir?: string;
}

export interface ImageBackendInfo {
  runtime: ImageRuntime;
  /** "onnxruntime", or the tfjs backend: "tensorflow" (tfjs-node) or "wasm". */
  name: "onnxruntime" | "tensorflow" | "wasm";
  /** wasm SIMD (tfjs's wasm backend only). */
  simd: boolean;
  initMs: number;
}

/** One loaded network: size x size RGB bytes -> its pooled features (non-negative). */
export interface FeatureEngine {
  backend: ImageBackendInfo;
  features(rgb: Uint8Array): Promise<Float32Array>;
  dispose(): void | Promise<void>;
}

// A variable specifier: the package is optional, so neither TypeScript nor a bundler should try to
// resolve it.
export const ORT_PACKAGE = "onnxruntime-node";

export function openFeatureEngine(network: NetworkSpec, runtime: ImageRuntime, options: FeatureEngineOptions): Promise<FeatureEngine> {
  if (runtime === "onnxruntime") return openOnnxEngine(network, options);
  return network.name === "mobilenet" ? openTfjsMobileNet(options.log) : openTfjsInception(options.log);
}

async function openTfjsMobileNet(log: (msg: string) => void): Promise<FeatureEngine> {
  const t0 = performance.now();
  const info = await initTfBackend(log);
  const { json, weights } = readNsfwjsModel("mobilenet_v2");
  const net = fusedNetFromPlan(planMobileNet(json, weights));
  const predict = (input: tf.Tensor4D) => net.predict(input);
  return tfjsEngine(MOBILENET.size, predict, () => net.dispose(), info, t0);
}

async function openTfjsInception(log: (msg: string) => void): Promise<FeatureEngine> {
  const t0 = performance.now();
  const info = await initTfBackend(log);
  const model = await inceptionLayersModel(INCEPTION.size, INCEPTION_CUT);
  const predict = (input: tf.Tensor4D) => tf.mean(model.predict(input) as tf.Tensor4D, [1, 2]);
  return tfjsEngine(INCEPTION.size, predict, () => model.dispose(), info, t0);
}

/**
 * nsfwjs's Keras InceptionV3 as tfjs-layers reads it, for `size` px inputs and ending at `cut`
 * (bench/experiments/backbones.ts measures other sizes and cuts). The head (dense layers sized
 * for 299 px) is never built, hence strict: false for its unused weights.
 */
export async function inceptionLayersModel(size: number, cut: string): Promise<tfl.LayersModel> {
  const { json, weights } = readNsfwjsModel("inception_v3");
  const topology = structuredClone(json.modelTopology);
  const config = topology.model_config.config;
  config.layers[0]!.config["batch_input_shape"] = [null, size, size, 3];
  config.layers = config.layers.slice(0, config.layers.findIndex((l) => l.name === cut) + 1);
  (config as Record<string, unknown>)["output_layers"] = [[cut, 0, 0]];
  return tfl.loadLayersModel(
    tf.io.fromMemory({ modelTopology: topology, weightSpecs: json.weightsManifest.flatMap((g) => g.weights), weightData: weights }),
    { strict: false },
  );
}

async function tfjsEngine(
  size: number,
  predict: (input: tf.Tensor4D) => tf.Tensor,
  dispose: () => void,
  info: { name: "tensorflow" | "wasm"; simd: boolean },
  t0: number,
): Promise<FeatureEngine> {
  // The first call compiles kernels and sizes the backend's buffers; pay for it at load.
  tf.dispose(tf.tidy(() => predict(tf.zeros([1, size, size, 3]))));
  return {
    backend: { runtime: "tfjs", name: info.name, simd: info.simd, initMs: performance.now() - t0 },
    async features(rgb) {
      // A plain loop: Float32Array.from with a map function took 12 ms here.
      const unit = new Float32Array(rgb.length);
      for (let i = 0; i < rgb.length; i++) unit[i] = rgb[i]! / 255;
      const out = tf.tidy(() => predict(tf.tensor4d(unit, [1, size, size, 3])));
      try {
        return (await out.data()) as Float32Array;
      } finally {
        out.dispose();
      }
    },
    dispose,
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
  /** From the model's bytes or its file. */
  InferenceSession: { create(model: Uint8Array | string, options: Record<string, unknown>): Promise<OrtSession> };
}

function inceptionGraph(): Uint8Array {
  const { json, weights } = readNsfwjsModel("inception_v3");
  return inceptionToOnnx(json, weights, INCEPTION.size, INCEPTION_CUT);
}

/** The ONNX model to load: MobileNet's bytes (small, built at every load), InceptionV3's cached file. */
async function onnxModel(network: NetworkSpec, { cacheDir, log }: FeatureEngineOptions): Promise<Uint8Array | string> {
  if (network.name === "mobilenet") {
    const { json, weights } = readNsfwjsModel("mobilenet_v2");
    return mobileNetToOnnx(planMobileNet(json, weights), network.size);
  }
  if (!cacheDir) return inceptionGraph();
  const file = path.join(cacheDir, "models", INCEPTION_GRAPH);
  if (await stat(file).then(() => true, () => false)) return file;
  const t0 = performance.now();
  await mkdir(path.dirname(file), { recursive: true });
  await writeAtomically(file, inceptionGraph());
  log(`InceptionV3 converted into ${file} in ${Math.round(performance.now() - t0)} ms (once per cache directory)`);
  return file;
}

async function openOnnxEngine(network: NetworkSpec, options: FeatureEngineOptions): Promise<FeatureEngine> {
  const t0 = performance.now();
  const imported = (await import(ORT_PACKAGE)) as OrtModule & { default?: OrtModule };
  const ort = imported.InferenceSession ? imported : imported.default!;
  const sessionOptions = {
    // One thread: the pipeline's unit is images per core, and a worker process already overlaps
    // decoding (libuv's threads) with inference. With 1 the kernels run on the calling thread
    // (the binding runs a session synchronously on Node's main thread) and no pool is started;
    // ORT's default would take every core. The inter-op pool is only used in parallel mode.
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    logSeverityLevel: 3,
  };
  const model = await onnxModel(network, options);
  let session: OrtSession;
  try {
    session = await ort.InferenceSession.create(model, sessionOptions);
  } catch (err) {
    if (typeof model !== "string") throw err;
    // A cached file ONNX Runtime cannot read (damaged on disk): written again from the weights.
    options.log(`cannot load ${model} (${String(err).replace(/\s+/g, " ").slice(0, 200)}); converting InceptionV3 again`);
    await unlink(model).catch(() => undefined);
    session = await ort.InferenceSession.create(await onnxModel(network, options), sessionOptions);
  }
  const [input, output] = [session.inputNames[0]!, session.outputNames[0]!];
  const size = network.size;
  const features = async (rgb: Uint8Array): Promise<Float32Array> => {
    const result = await session.run({ [input]: new ort.Tensor("float32", rgbToChw(rgb, size), [1, 3, size, size]) });
    return result[output]!.data as Float32Array;
  };
  // The first run plans memory and picks kernels; pay for it at load.
  await features(new Uint8Array(3 * size * size));
  return {
    backend: { runtime: "onnxruntime", name: "onnxruntime", simd: false, initMs: performance.now() - t0 },
    features,
    dispose: () => session.release(),
  };
}
