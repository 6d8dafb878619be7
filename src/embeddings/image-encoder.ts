// The image encoder: a product photo -> one unit vector, from one or two networks that ship inside
// nsfwjs (feature-engines.ts), chosen per deployment (IMAGE_MODEL):
//
// - "mobilenet" (the default): MobileNetV2's pooled features at 160x160. Measured on fashion photos:
//   160 px for type precision@10 0.353 against 0.367 at 224 px (at about half the cost); 128 px
//   lost 0.025 zero-shot F1. Square-rooting the non-negative features (a Hellinger-style map)
//   gains 0.02-0.03.
// - "mobilenet+inception" (opt-in quality): the same MobileNetV2 vector beside InceptionV3's
//   `mixed10` features at 224 px, each square-rooted and unit length, concatenated at equal
//   weight (3,328 dimensions). All four measures of issue 12 rose in process (zero-shot F1 0.667 ->
//   0.699, photo-to-photo same type 0.504 -> 0.527) for 26-34 ms more a photo on one core (README,
//   "A second network beside MobileNet"); weights 0.7 and 0.5 for Inception were no better.
//
// Two runtimes run the same networks on the same weights:
// - ONNX Runtime (onnxruntime-node's native CPU kernels), an optional dependency installed by
//   default: ~3-6.5 ms of MobileNet inference per image on one core (its NCHWc layout
//   optimisation: without it, ~17 ms), the only way to the 20 ms-per-image target;
// - TensorFlow.js's wasm backend (or tfjs-node's native binding, if installed), the reference that
//   defines the models and the fallback when onnxruntime-node is absent or cannot load: ~30-45 ms
//   for MobileNet, nearly all of it in XNNPACK's wasm-SIMD convolutions (1x1: ~5 GMAC/s,
//   depthwise: ~1.6); InceptionV3 ~200 ms.
// Their vectors agree to float rounding (cosine 1 - 1e-8), the same order of difference as ONNX
// Runtime's own on two CPUs (it picks kernels by AVX2/AVX-512), so they share one version: a
// deployment can switch runtime, or run workers on both, without re-embedding anything. Batching
// does not pay on either (measured: 0-10% per image, within noise) and one thread is the cheapest
// per image, so images go one by one.
import { createRequire } from "node:module";
import { COLOUR_SOURCE_SIZE, colourProfile, colourProfileOfSource } from "./colour-profile.js";
import { decodeRgb } from "./decode-rgb.js";
import { INCEPTION, MOBILENET, openFeatureEngine, ORT_PACKAGE, type FeatureEngine, type ImageBackendInfo, type ImageRuntime, type NetworkSpec } from "./feature-engines.js";
import { NSFWJS_VERSION } from "./nsfwjs-models.js";
import { createSerialQueue } from "./serial-queue.js";
import { SharedResource, type Lease } from "./shared-resource.js";
import type { ImageEncoder } from "./types.js";
import { l2NormaliseInPlace } from "./vector-math.js";

export type { ImageBackendInfo, ImageRuntime } from "./feature-engines.js";

/** The networks a deployment embeds photos with (IMAGE_MODEL). */
export const IMAGE_MODELS = ["mobilenet", "mobilenet+inception"] as const;
export type ImageModel = (typeof IMAGE_MODELS)[number];

export const IMAGE_INPUT_SIZE = MOBILENET.size;
/** The default model's dimensions. */
export const IMAGE_DIMENSIONS = MOBILENET.dimensions;

const NSFWJS = `nsfwjs${NSFWJS_VERSION.split(".").slice(0, 2).join(".")}`;
// Anything that changes the vectors beyond float rounding (weights, input size, resizing, pixel
// range, post-processing) must change these strings: stored embeddings are only comparable under
// the same version. Both runtimes give them (see above); tests hold them to a cosine of 1 - 1e-6.
/** The default model's version. */
export const IMAGE_ENCODER_VERSION = `mnv2-${NSFWJS}-fused-${IMAGE_INPUT_SIZE}-sqrt-v1`;
const VERSIONS: Record<ImageModel, string> = {
  mobilenet: IMAGE_ENCODER_VERSION,
  "mobilenet+inception": `${IMAGE_ENCODER_VERSION}+inc3-${NSFWJS}-mixed10-${INCEPTION.size}-sqrt-concat-v1`,
};
const NETWORKS: Record<ImageModel, readonly NetworkSpec[]> = {
  mobilenet: [MOBILENET],
  "mobilenet+inception": [MOBILENET, INCEPTION],
};

export function imageEncoderVersion(model: ImageModel): string {
  return VERSIONS[model];
}

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

let backendLog: (msg: string) => void = () => undefined;

// Keyed by network, runtime and cache directory (where InceptionV3's converted graph is kept).
const engines = new SharedResource<FeatureEngine>(
  (key) => {
    const [network, runtime, cacheDir] = JSON.parse(key) as [NetworkSpec["name"], ImageRuntime, string | null];
    return openFeatureEngine(network === "mobilenet" ? MOBILENET : INCEPTION, runtime, { log: backendLog, ...(cacheDir ? { cacheDir } : {}) });
  },
  (engine) => engine.dispose(),
);

// One queue per process, not per encoder: every encoder shares the models (and, on tfjs, the
// backend), and a second image in flight would only raise peak memory.
const serial = createSerialQueue();

export interface OpenedImageEncoder extends ImageEncoder {
  readonly model: ImageModel;
  readonly backend: ImageBackendInfo;
  close(): Promise<void>;
}

export interface OpenImageEncoderOptions {
  /** Default: "mobilenet". */
  model?: ImageModel;
  /** Where a converted model is kept between starts (InceptionV3's graph); default: converted at every load. */
  cacheDir?: string;
  log?: (msg: string) => void;
  /** The one line saying the default runtime fell back to tfjs; default: log. */
  warn?: (msg: string) => void;
  /**
   * Default: ONNX Runtime if installed, else tfjs; an ONNX Runtime that fails to load falls back to
   * tfjs. A runtime asked for by name that cannot load is an error.
   */
  runtime?: ImageRuntime;
}

/** Loads the models on first use in the process; later opens share them until the last one closes. */
export async function openImageEncoder(opts: OpenImageEncoderOptions = {}): Promise<OpenedImageEncoder> {
  if (opts.log) backendLog = opts.log;
  const model = opts.model ?? "mobilenet";
  const networks = NETWORKS[model];
  const leases = await acquireEngines(networks, opts.cacheDir, opts.runtime, opts.warn ?? opts.log ?? (() => undefined));
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
  // Decoding runs on libuv's threads, so it overlaps with other images' inference; each network
  // gets the photo resized from the original, at its own size.
  const decode = (image: Buffer) => Promise.all(networks.map((n) => decodeRgb(image, n.size)));
  const vectorOf = (inputs: Uint8Array[]) =>
    serial(async () => {
      const parts: Float32Array[] = [];
      for (const [i, lease] of leases.entries()) parts.push(await lease.value.features(inputs[i]!));
      return parts;
    }).then(toVector);
  const open = () => {
    if (closed) throw new Error("the image encoder is closed");
  };
  return {
    model,
    version: VERSIONS[model],
    dimensions: networks.reduce((sum, n) => sum + n.dimensions, 0),
    backend: leases[0]!.value.backend,
    async encode(image: Buffer): Promise<Float32Array> {
      open();
      return track(decode(image).then(vectorOf));
    },
    async encodeWithColour(image: Buffer): Promise<{ image: Float32Array; colour: Float32Array }> {
      open();
      return track(
        decode(image).then(async (inputs) => {
          // One decode for both: the colour profile reads MobileNet's input (see colour-profile.ts).
          const colour = COLOUR_SOURCE_SIZE === MOBILENET.size ? colourProfileOfSource(inputs[0]!) : await colourProfile(image);
          return { image: await vectorOf(inputs), colour };
        }),
      );
    },
    async close() {
      closed = true;
      // Calls already made finish on the weights they started with.
      await Promise.allSettled([...inFlight]);
      await Promise.all(leases.map((l) => l.release()));
    },
  };
}

/** Every network on one runtime: a vector's parts never mix runtimes. */
async function acquireEngines(
  networks: readonly NetworkSpec[],
  cacheDir: string | undefined,
  runtime: ImageRuntime | undefined,
  warn: (msg: string) => void,
): Promise<Lease<FeatureEngine>[]> {
  const on = async (r: ImageRuntime) => {
    const leases: Lease<FeatureEngine>[] = [];
    try {
      for (const n of networks) leases.push(await engines.acquire(JSON.stringify([n.name, r, cacheDir ?? null])));
      return leases;
    } catch (err) {
      await Promise.all(leases.map((l) => l.release()));
      throw err;
    }
  };
  // Asked for by name: a runtime that cannot load is an error, not a quiet change of speed and vectors.
  if (runtime) return on(runtime);
  // Both fallbacks miss the embedding target, so each says so in one line.
  if (defaultImageRuntime() === "tfjs") {
    warn(`${ORT_PACKAGE} is not installed; the image model runs on tfjs, several times slower (reinstall with npm ci)`);
    return on("tfjs");
  }
  try {
    return await on("onnxruntime");
  } catch (err) {
    const reason = String(err).replace(/\s+/g, " ");
    warn(`${ORT_PACKAGE} is installed but cannot run the image model (${reason}); using tfjs, several times slower`);
    return on("tfjs");
  }
}

/** Each network's features square-rooted and unit length, side by side at equal weight, unit length. */
function toVector(parts: Float32Array[]): Float32Array {
  const v = new Float32Array(parts.reduce((sum, p) => sum + p.length, 0));
  let offset = 0;
  for (const raw of parts) {
    const piece = v.subarray(offset, offset + raw.length);
    // Features are means of ReLU(6) outputs, hence >= 0; the clamp only guards rounding.
    for (let i = 0; i < raw.length; i++) piece[i] = Math.sqrt(Math.max(0, raw[i]!));
    l2NormaliseInPlace(piece);
    offset += raw.length;
  }
  return parts.length === 1 ? v : l2NormaliseInPlace(v);
}
