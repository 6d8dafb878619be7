// Issue 12: would another image network that ships inside an npm package lift the text-image map and
// photo-to-photo similarity enough to pay for itself? nsfwjs 4.3.0 carries, beside the MobileNetV2 the
// service runs, an InceptionV3 (Keras, 94 convolutions, 299 px in the file; its ImageNet weights
// frozen up to `mixed5`, the layers above fine-tuned with the NSFW head). Its pooled `mixed10` (2048
// channels) or, with `--cut mixed5`, the last frozen block (768) is measured here at a few input sizes
// against today's features, with the same map recipe (word prototypes included), split and measures
// as bench/eval-features.ts, plus photo-to-photo precision on the raw features (no map).
//
//   npx tsx bench/experiments/backbones.ts [--sizes 160,224,299] [--cut mixed10] [--part 0/2] [--time N]
//
// Features are computed with TensorFlow.js on its wasm backend (tfjs-layers reads the Keras file as
// it is; the input size is changed in the topology, the network cut and averaged over its
// positions, as the service does for MobileNet). `--part k/n` computes only every n-th photo from
// the k-th and caches it, so n processes can share the work; the run without `--part` reads the
// parts (and computes what is missing). Cached under <CACHE_DIR>/eval/backbone-*.bin. `--time N`
// times inference alone on the first N photos at each size on TensorFlow.js and on ONNX Runtime
// (the service's graph, src/embeddings/onnx-inception.ts), and checks that the two agree; nothing
// cached (for a quiet machine). The service's quality image model (IMAGE_MODEL=mobilenet+inception)
// is the 224 px, mixed10 row beside MobileNet at weight 1.
import { readFileSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs-core";
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { decodeRgb, rgbToChw } from "../../src/embeddings/decode-rgb.js";
import { readNsfwjsModel } from "../../src/embeddings/nsfwjs-models.js";
import { initTfBackend } from "../../src/embeddings/tf-backend.js";
import { dot } from "../../src/embeddings/vector-math.js";
import { inceptionLayersModel } from "../../src/embeddings/feature-engines.js";
import { INCEPTION_INPUT, INCEPTION_OUTPUT, inceptionToOnnx } from "../../src/embeddings/onnx-inception.js";
import { combine, rooted } from "../feature-vectors.js";
import { byType, CACHE_DIR, colourPrecision, DEFAULT_DIR, loadDataset, queriesThrough, scoreTextImage, selfPrecisionAtK, textImageTask } from "../eval.js";

const MODEL = "inception_v3";
let CUT = "mixed10";

const loadInception = (size: number) => inceptionLayersModel(size, CUT);

/** decodeRgb's bytes as the [1, size, size, 3] floats in [0, 1] the Keras model takes (nsfwjs's scaling). */
const nhwc = (rgb: Uint8Array, size: number) => tf.tensor4d(Float32Array.from(rgb, (x) => x / 255), [1, size, size, 3]);

function cacheFile(size: number, part: string): string {
  return join(CACHE_DIR, "eval", `backbone-${MODEL}-${CUT}-${size}-${part.replace("/", "of")}.bin`);
}

/** One pooled vector per photo (null where another part computes it), and the mean inference time. */
async function features(dir: string, files: readonly string[], size: number, k: number, n: number): Promise<{ vectors: (Float32Array | null)[]; ms: number }> {
  const file = cacheFile(size, `${k}/${n}`);
  try {
    const bytes = await readFile(file);
    const ms = bytes.readDoubleLE(0);
    const dims = bytes.readUInt32LE(8);
    let offset = 12;
    const vectors = files.map((_, i) => {
      if (i % n !== k) return null;
      const v = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + 4 * dims));
      offset += 4 * dims;
      return v;
    });
    return { vectors, ms };
  } catch {
    // not cached yet
  }
  await initTfBackend(console.error);
  const model = await loadInception(size);
  const vectors: (Float32Array | null)[] = [];
  let ms = 0;
  let done = 0;
  for (let i = 0; i < files.length; i++) {
    if (i % n !== k) {
      vectors.push(null);
      continue;
    }
    const rgb = await decodeRgb(readFileSync(join(dir, files[i]!)), size);
    const t0 = performance.now();
    const pooled = tf.tidy(() => tf.mean(model.predict(nhwc(rgb, size)) as tf.Tensor4D, [1, 2]));
    vectors.push(Float32Array.from(await pooled.data()));
    pooled.dispose();
    ms += performance.now() - t0;
    if (++done % 100 === 0) console.error(`${MODEL} ${size} px part ${k}/${n}: ${done} photos, ${(ms / done).toFixed(0)} ms each`);
  }
  ms /= done;
  const mine = vectors.filter((v): v is Float32Array => v !== null);
  const header = Buffer.alloc(12);
  header.writeDoubleLE(ms, 0);
  header.writeUInt32LE(mine[0]!.length, 8);
  await mkdir(join(CACHE_DIR, "eval"), { recursive: true });
  await writeFile(`${file}.tmp`, Buffer.concat([header, ...mine.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength))]));
  await rename(`${file}.tmp`, file);
  return { vectors, ms };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dir: { type: "string", default: DEFAULT_DIR }, sizes: { type: "string", default: "160,224,299" }, part: { type: "string" }, time: { type: "string" }, cut: { type: "string", default: "mixed10" } },
  });
  CUT = values.cut;
  const sizes = values.sizes.split(",").map(Number);
  if (values.time) {
    // Inference time alone on a quiet machine, nothing cached: the first N photos at each size.
    const data = await loadDataset(values.dir, undefined, () => undefined);
    await data.textEncoder.close();
    await initTfBackend(console.error);
    const ort = (await import("onnxruntime-node")) as unknown as {
      InferenceSession: { create(model: Uint8Array, options: object): Promise<{ run(feeds: object): Promise<Record<string, { data: Float32Array }>> }> };
      Tensor: new (type: "float32", data: Float32Array, dims: number[]) => unknown;
    };
    const p50 = (times: number[]) => [...times].sort((a, b) => a - b)[times.length >> 1]!.toFixed(0);
    for (const size of sizes) {
      const model = await loadInception(size);
      const { json, weights } = readNsfwjsModel(MODEL);
      const session = await ort.InferenceSession.create(inceptionToOnnx(json, weights, size, CUT), {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionMode: "sequential",
        graphOptimizationLevel: "all",
        logSeverityLevel: 3,
      });
      const tfjsMs: number[] = [], onnxMs: number[] = [];
      let worst = 1;
      for (const item of data.items.slice(0, Number(values.time))) {
        const rgb = await decodeRgb(readFileSync(join(values.dir, item.image)), size);
        const input = nhwc(rgb, size);
        let t0 = performance.now();
        const out = tf.tidy(() => tf.mean(model.predict(input) as tf.Tensor4D, [1, 2]));
        const fromTfjs = (await out.data()) as Float32Array;
        tfjsMs.push(performance.now() - t0);
        tf.dispose([input, out]);
        const chw = rgbToChw(rgb, size);
        t0 = performance.now();
        const fromOnnx = (await session.run({ [INCEPTION_INPUT]: new ort.Tensor("float32", chw, [1, 3, size, size]) }))[INCEPTION_OUTPUT]!.data;
        onnxMs.push(performance.now() - t0);
        worst = Math.min(worst, dot(fromTfjs, fromOnnx) / Math.sqrt(dot(fromTfjs, fromTfjs) * dot(fromOnnx, fromOnnx)));
      }
      console.log(`${MODEL} to ${CUT}, ${size} px, inference p50 over ${tfjsMs.length} photos: TensorFlow.js ${tf.getBackend()} ${p50(tfjsMs)} ms, ONNX Runtime (one thread) ${p50(onnxMs)} ms; cosine of their outputs at least ${worst.toFixed(7)}`);
      model.dispose();
    }
    return;
  }
  if (values.part) {
    const [k, n] = values.part.split("/").map(Number) as [number, number];
    // The same file order as loadDataset's items, which the full run expects.
    const data = await loadDataset(values.dir, undefined, () => undefined);
    const files = data.items.map((i) => i.image);
    await data.textEncoder.close();
    for (const size of sizes) await features(values.dir, files, size, k, n);
    return;
  }
  const data = await loadDataset(values.dir, undefined, (m) => console.error(m));
  try {
    const task = textImageTask(data.items);
    const files = data.items.map((i) => i.image);
    const count = files.length;
    const f = (x: number) => x.toFixed(3);
    const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(44)}${cells.map((c) => c.padStart(9)).join("")}`);
    console.log("image networks for the text-image map (the service's recipe, word prototypes included), fashion-dev: fitted on the described half, measured on the withheld half");
    row("features", "ms/photo", "dims", "F1", "type", "<colour>", "i2i:type", "raw i2i", "fit s");
    // With the word prototypes, as the service fits and queries its maps (bench/eval.ts's "+ word prototypes").
    const measure = (name: string, ms: number, image: Float32Array[]) => {
      const t0 = performance.now();
      const map = fitTextImageMap(task.described.map((i) => ({ image: image[i]!, colour: data.colour[i]!, text: data.text[i]!, descriptor: data.items[i]!.productDisplayName })));
      const fitS = (performance.now() - t0) / 1000;
      const mapped = task.withheld.map((i) => map.apply(image[i]!, data.colour[i]!));
      const queries = queriesThrough(map, data.textEncoder);
      const s = scoreTextImage(task, queries, mapped);
      const i2i = selfPrecisionAtK(mapped, task.withheldItems, [byType])[0]!;
      const raw = selfPrecisionAtK(task.withheld.map((i) => image[i]!), task.withheldItems, [byType])[0]!;
      row(name, ms ? ms.toFixed(0) : "", String(image[0]!.length), f(s.f1["one-item"]), f(s.typeP10), f(colourPrecision(task, queries, mapped).p10), f(i2i), f(raw), fitS.toFixed(1));
    };
    measure("MobileNetV2 160 px (today)", 0, data.image);
    for (const size of sizes) {
      const parts = [0, 1].map(async (k) => await features(values.dir, files, size, k, 2));
      const [a, b] = await Promise.all(parts);
      const inception = rooted(files.map((_, i) => (a!.vectors[i] ?? b!.vectors[i])!));
      const ms = (a!.ms + b!.ms) / 2;
      measure(`InceptionV3 ${size} px, mean of ${CUT}`, ms, inception);
      for (const w of [1, 0.7, 0.5]) measure(`  and MobileNetV2 160 px beside it, at ${w}`, ms, combine([[inception, w], [data.image, 1]], count));
    }
    console.log("ms/photo: TensorFlow.js wasm (SIMD), one thread, inference alone; MobileNetV2 160 px: 24-38 ms there, 6.2-6.6 ms on ONNX Runtime");
  } finally {
    await data.textEncoder.close();
  }
}

await main();
