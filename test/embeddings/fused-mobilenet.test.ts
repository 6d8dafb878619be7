// The fused forward pass must compute what the Keras model computes: checked against tfjs-layers
// running the very same topology and weights.
import * as tf from "@tensorflow/tfjs-core";
import * as tfl from "@tensorflow/tfjs-layers";
import { afterAll, beforeAll, expect, it } from "vitest";
import { decodeRgb } from "../../src/embeddings/decode-rgb.js";
import { buildFusedMobileNet, type FeatureNet } from "../../src/embeddings/fused-mobilenet.js";
import { planMobileNet } from "../../src/embeddings/mobilenet-plan.js";
import { readNsfwjsModel, type KerasLayer, type NsfwjsBundle } from "../../src/embeddings/nsfwjs-models.js";
import { mobileNetToOnnx } from "../../src/embeddings/onnx-mobilenet.js";
import { initTfBackend } from "../../src/embeddings/tf-backend.js";
import { samplePhotos } from "../support/sample-photos.js";
import { cacheDir } from "../support/cache-dir.js";

const SIZE = 160;
let bundle: NsfwjsBundle;
let fused: FeatureNet;
let reference: tfl.LayersModel;

// The Keras graph cut at flatten_1, with its input and final pooling sized for SIZE.
function featureTopology(b: NsfwjsBundle): object {
  const topology = structuredClone(b.json.modelTopology);
  const config = topology.model_config.config as { layers: KerasLayer[]; output_layers?: unknown };
  const cut = config.layers.findIndex((l) => l.name === "flatten_1");
  config.layers = config.layers.slice(0, cut + 1);
  config.output_layers = [["flatten_1", 0, 0]];
  for (const l of config.layers) {
    if (l.class_name === "InputLayer") l.config.batch_input_shape = [null, SIZE, SIZE, 3];
    if (l.class_name === "AveragePooling2D") l.config.pool_size = l.config.strides = [SIZE / 32, SIZE / 32];
  }
  delete topology.training_config;
  return topology;
}

beforeAll(async () => {
  await initTfBackend();
  bundle = readNsfwjsModel("mobilenet_v2");
  fused = buildFusedMobileNet(bundle.json, bundle.weights);
  reference = await tfl.loadLayersModel(
    {
      load: async () => ({
        modelTopology: featureTopology(bundle),
        weightSpecs: bundle.json.weightsManifest.flatMap((g) => g.weights),
        weightData: bundle.weights,
      }),
    },
    { strict: false }, // the classification head's weights are in the shard but not in the cut graph
  );
}, 120_000);

afterAll(() => {
  fused?.dispose();
  reference?.dispose();
});

it("matches the tfjs-layers model on real photos", async () => {
  const photos = await samplePhotos(cacheDir);
  for (const name of ["chelsea", "motorcycle_left", "rocket"] as const) {
    const rgb = await decodeRgb(photos[name], SIZE);
    const x = tf.tensor4d(Float32Array.from(rgb, (c) => c / 255), [1, SIZE, SIZE, 3]);
    const [ours, theirs] = tf.tidy(() => [fused.predict(x).dataSync(), (reference.predict(x) as tf.Tensor).dataSync()]);
    x.dispose();
    expect(ours.length).toBe(1280);
    let maxDiff = 0;
    let maxValue = 0;
    for (let i = 0; i < ours.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(ours[i]! - theirs[i]!));
      maxValue = Math.max(maxValue, Math.abs(theirs[i]!));
    }
    expect(maxValue).toBeGreaterThan(0.1);
    expect(maxDiff / maxValue, name).toBeLessThan(1e-4);
  }
});

// The same plan written as ONNX and run by ONNX Runtime, against the same reference.
it("exports to ONNX that ONNX Runtime runs to the same features", async () => {
  // Typed here, not imported for types: the package is optional.
  interface Ort {
    Tensor: new (type: "float32", data: Float32Array, dims: number[]) => unknown;
    InferenceSession: {
      create(model: Uint8Array, options: object): Promise<{
        inputNames: string[];
        outputNames: string[];
        run(feeds: Record<string, unknown>): Promise<Record<string, { data: unknown }>>;
        release(): Promise<void>;
      }>;
    };
  }
  const specifier = "onnxruntime-node";
  const ort = (await import(specifier)) as Ort;
  const session = await ort.InferenceSession.create(mobileNetToOnnx(planMobileNet(bundle.json, bundle.weights), SIZE), { intraOpNumThreads: 1 });
  try {
    const photos = await samplePhotos(cacheDir);
    for (const name of ["chelsea", "rocket"] as const) {
      const rgb = await decodeRgb(photos[name], SIZE);
      const x = tf.tensor4d(Float32Array.from(rgb, (c) => c / 255), [1, SIZE, SIZE, 3]);
      const theirs = tf.tidy(() => (reference.predict(x) as tf.Tensor).dataSync());
      const nchw = tf.tidy(() => tf.transpose(x, [0, 3, 1, 2]).dataSync() as Float32Array);
      x.dispose();
      const out = await session.run({ [session.inputNames[0]!]: new ort.Tensor("float32", nchw, [1, 3, SIZE, SIZE]) });
      const ours = out[session.outputNames[0]!]!.data as Float32Array;
      expect(ours.length).toBe(1280);
      let maxDiff = 0;
      let maxValue = 0;
      for (let i = 0; i < ours.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(ours[i]! - theirs[i]!));
        maxValue = Math.max(maxValue, Math.abs(theirs[i]!));
      }
      expect(maxDiff / maxValue, name).toBeLessThan(1e-4);
    }
  } finally {
    await session.release();
  }
});
