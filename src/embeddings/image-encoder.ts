// The image encoder: MobileNetV2 (nsfwjs's ImageNet backbone) pooled features at 160x160.
// Measured on fashion photos: 160 px costs 20-30 ms per image on one core (224 px: ~45 ms) for
// type precision@10 0.353 against 0.367; square-rooting the non-negative features (a Hellinger-
// style map) gains 0.02-0.03; batching does not pay on the wasm backend, so images go one by one.
import * as tf from "@tensorflow/tfjs-core";
import { decodeRgb } from "./decode-rgb.js";
import { buildFusedMobileNet, type FeatureNet } from "./fused-mobilenet.js";
import { NSFWJS_VERSION, readNsfwjsMobileNetV2 } from "./nsfwjs-mobilenet.js";
import { createSerialQueue } from "./serial-queue.js";
import { SharedResource, type Lease } from "./shared-resource.js";
import { initTfBackend, type TfBackendInfo } from "./tf-backend.js";
import type { ImageEncoder } from "./types.js";
import { l2NormaliseInPlace } from "./vector-math.js";

export const IMAGE_INPUT_SIZE = 160;
export const IMAGE_DIMENSIONS = 1280;
// Anything that changes the vectors (weights, input size, resizing, pixel range, post-processing)
// must change this string: stored embeddings are only comparable under the same version.
export const IMAGE_ENCODER_VERSION = `mnv2-nsfwjs${NSFWJS_VERSION.split(".").slice(0, 2).join(".")}-fused-${IMAGE_INPUT_SIZE}-sqrt-v1`;

interface LoadedModel {
  net: FeatureNet;
  backend: TfBackendInfo;
}

let backendLog: (msg: string) => void = () => undefined;

const models = new SharedResource<LoadedModel>(
  async () => {
    const backend = await initTfBackend(backendLog);
    const { json, weights } = readNsfwjsMobileNetV2();
    const net = buildFusedMobileNet(json, weights);
    // The first call compiles kernels and sizes the backend's buffers; pay for it at load.
    tf.dispose(net.predict(tf.zeros([1, IMAGE_INPUT_SIZE, IMAGE_INPUT_SIZE, 3])));
    return { net, backend };
  },
  ({ net }) => net.dispose(),
);

// One queue per process, not per encoder: every encoder shares the backend.
const serial = createSerialQueue();

export interface OpenedImageEncoder extends ImageEncoder {
  readonly backend: TfBackendInfo;
  close(): Promise<void>;
}

/** Loads the model on first use in the process; later opens share it until the last one closes. */
export async function openImageEncoder(opts: { log?: (msg: string) => void } = {}): Promise<OpenedImageEncoder> {
  if (opts.log) backendLog = opts.log;
  const lease: Lease<LoadedModel> = await models.acquire("mobilenet_v2");
  const { net, backend } = lease.value;
  let closed = false;
  const inFlight = new Set<Promise<Float32Array>>();
  const encode = async (image: Buffer): Promise<Float32Array> => {
    // Decoding runs on libuv's threads, so it overlaps with other images' inference.
    const rgb = await decodeRgb(image, IMAGE_INPUT_SIZE);
    return serial(() => features(net, rgb));
  };
  return {
    version: IMAGE_ENCODER_VERSION,
    dimensions: IMAGE_DIMENSIONS,
    backend,
    encode(image: Buffer): Promise<Float32Array> {
      if (closed) return Promise.reject(new Error("the image encoder is closed"));
      const call = encode(image);
      inFlight.add(call);
      void call.then(
        () => inFlight.delete(call),
        () => inFlight.delete(call),
      );
      return call;
    },
    async close() {
      closed = true;
      // Calls already made finish on the weights they started with.
      await Promise.allSettled([...inFlight]);
      await lease.release();
    },
  };
}

async function features(net: FeatureNet, rgb: Uint8Array): Promise<Float32Array> {
  // [0, 1] pixels, as nsfwjs fed the model when fine-tuning it (not Keras's [-1, 1]). A plain loop:
  // Float32Array.from with a map function took 12 ms here, half the model's time.
  const unit = new Float32Array(rgb.length);
  for (let i = 0; i < rgb.length; i++) unit[i] = rgb[i]! / 255;
  const out = tf.tidy(() => net.predict(tf.tensor4d(unit, [1, IMAGE_INPUT_SIZE, IMAGE_INPUT_SIZE, 3])));
  let raw: Float32Array;
  try {
    raw = (await out.data()) as Float32Array;
  } finally {
    out.dispose();
  }
  const v = new Float32Array(IMAGE_DIMENSIONS);
  // Features are means of ReLU6 outputs, hence >= 0; the clamp only guards rounding.
  for (let i = 0; i < v.length; i++) v[i] = Math.sqrt(Math.max(0, raw[i]!));
  return l2NormaliseInPlace(v);
}
