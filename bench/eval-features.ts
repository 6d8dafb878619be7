// Would other image features from the packaged MobileNetV2 lift the text-image map? Each variant's
// gain on fashion-dev (the map fitted on the described half, measured on the withheld half, as
// bench/eval.ts does) next to its cost per photo, on ONNX Runtime with one thread:
//   - the model's input at 160 px (today) and 224 px;
//   - other layers pooled beside today's average of Conv_1: Conv_1's maximum, and the mean of
//     block_16_expand (960 channels) and block_13_expand (576), each square-rooted and unit-scaled
//     like today's features, then concatenated;
//   - a mirrored copy of the photo averaged with it (test-time flip: twice the inference).
//
//   npx tsx bench/eval-features.ts [--dir ../shared/eval/fashion-dev] [--sizes 160,224]
//
// Not the service's encoder: a research harness over the same network (mobileNetToOnnx with extra
// pooled outputs). Pooled features are cached under <CACHE_DIR>/eval/features-*.bin.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { fitTextImageMap } from "../src/embeddings/index.js";
import { decodeRgb, rgbToChw } from "../src/embeddings/decode-rgb.js";
import { planMobileNet } from "../src/embeddings/mobilenet-plan.js";
import { readNsfwjsModel } from "../src/embeddings/nsfwjs-models.js";
import { mobileNetToOnnx } from "../src/embeddings/onnx-mobilenet.js";
import type { PooledOutput } from "../src/embeddings/onnx-mobilenet.js";
import { combine, rooted } from "./feature-vectors.js";
import { byColour, byType, CACHE_DIR, colourPrecision, DEFAULT_DIR, loadDataset, scoreTextImage, selfPrecisionAtK, textImageTask } from "./eval.js";

const EXTRA: PooledOutput[] = [
  { tensor: "Conv_1", pool: "max" },
  { tensor: "block_16_expand", pool: "mean" },
  { tensor: "block_13_expand", pool: "mean" },
];

interface Pooled {
  /** Output name -> one raw pooled vector per photo. */
  outputs: Record<string, Float32Array[]>;
  inferenceMs: number;
}

async function pooledFeatures(dir: string, files: readonly string[], size: number, flip: boolean): Promise<Pooled> {
  const key = createHash("sha256").update(`${size} ${flip} ${JSON.stringify(EXTRA)}\n${files.join("\n")}`).digest("hex").slice(0, 16);
  const file = join(CACHE_DIR, "eval", `features-${key}.bin`);
  try {
    const bytes = await readFile(file);
    const headerLength = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.subarray(4, 4 + headerLength).toString()) as { names: string[]; dims: number[]; inferenceMs: number };
    let offset = 4 + headerLength;
    const outputs: Record<string, Float32Array[]> = {};
    header.names.forEach((name, k) => {
      outputs[name] = files.map(() => {
        const v = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + 4 * header.dims[k]!));
        offset += 4 * header.dims[k]!;
        return v;
      });
    });
    return { outputs, inferenceMs: header.inferenceMs };
  } catch {
    // not cached yet
  }
  const ort = (await import("onnxruntime-node")) as unknown as {
    InferenceSession: { create(model: Uint8Array, options: object): Promise<{ inputNames: string[]; outputNames: string[]; run(feeds: object): Promise<Record<string, { data: Float32Array }>> }> };
    Tensor: new (type: "float32", data: Float32Array, dims: number[]) => unknown;
  };
  const { json, weights } = readNsfwjsModel("mobilenet_v2");
  const session = await ort.InferenceSession.create(mobileNetToOnnx(planMobileNet(json, weights), size, EXTRA), {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    logSeverityLevel: 3,
  });
  const names = session.outputNames;
  const outputs: Record<string, Float32Array[]> = Object.fromEntries(names.map((n) => [n, []]));
  let inferenceMs = 0;
  for (const name of files) {
    let bytes = await readFile(join(dir, name));
    if (flip) bytes = await sharp(bytes).flop().png().toBuffer();
    const chw = rgbToChw(await decodeRgb(bytes, size), size);
    const t0 = performance.now();
    const result = await session.run({ [session.inputNames[0]!]: new ort.Tensor("float32", chw, [1, 3, size, size]) });
    inferenceMs += performance.now() - t0;
    for (const n of names) outputs[n]!.push(Float32Array.from(result[n]!.data));
  }
  inferenceMs /= files.length;
  const header = Buffer.from(JSON.stringify({ names, dims: names.map((n) => outputs[n]![0]!.length), inferenceMs }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  const body = names.flatMap((n) => outputs[n]!.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength)));
  await mkdir(join(CACHE_DIR, "eval"), { recursive: true });
  await writeFile(`${file}.tmp`, Buffer.concat([length, header, ...body]));
  await rename(`${file}.tmp`, file);
  return { outputs, inferenceMs };
}

/** Today's post-processing per part (square root, unit length), parts weighted and concatenated, unit length. */
function features(parts: [Float32Array[], number][], n: number): Float32Array[] {
  return combine(parts.map(([vectors, w]) => [rooted(vectors), w]), n);
}

const mean = (a: Float32Array[], b: Float32Array[]) => a.map((x, i) => x.map((y, j) => (y + b[i]![j]!) / 2));

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { dir: { type: "string", default: DEFAULT_DIR }, sizes: { type: "string", default: "160,224" } } });
  const data = await loadDataset(values.dir, undefined, (m) => console.error(m));
  try {
    const task = textImageTask(data.items);
    const files = data.items.map((i) => i.image);
    const f = (x: number) => x.toFixed(3);
    const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(46)}${cells.map((c) => c.padStart(9)).join("")}`);
    console.log(`image features for the text-image map (default map recipe), fashion-dev: fitted on the described half, measured on the withheld half`);
    row("variant", "ms/photo", "dims", "F1", "type", "<colour>", "i2i:type", "fit s");
    const measure = (name: string, ms: number, image: Float32Array[]) => {
      const t0 = performance.now();
      const map = fitTextImageMap(task.described.map((i) => ({ image: image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
      const fitS = (performance.now() - t0) / 1000;
      const mapped = task.withheld.map((i) => map.apply(image[i]!, data.colour[i]!));
      const s = scoreTextImage(task, data.textEncoder, mapped);
      const rec = selfPrecisionAtK(mapped, task.withheldItems, [byType, byColour])[0]!;
      row(name, ms.toFixed(1), String(image[0]!.length), f(s.f1["one-item"]), f(s.typeP10), f(colourPrecision(task, data.textEncoder, mapped).p10), f(rec), fitS.toFixed(1));
    };
    for (const size of values.sizes.split(",").map(Number)) {
      const plain = await pooledFeatures(values.dir, files, size, false);
      const o = plain.outputs;
      const n = files.length;
      const ms = plain.inferenceMs;
      measure(`${size} px, mean of Conv_1${size === 160 ? " (today)" : ""}`, ms, features([[o["flatten_1"]!, 1]], n));
      measure(`${size} px, + max of Conv_1`, ms, features([[o["flatten_1"]!, 1], [o["Conv_1/max"]!, 1]], n));
      measure(`${size} px, + mean of block_16_expand`, ms, features([[o["flatten_1"]!, 1], [o["block_16_expand/mean"]!, 1]], n));
      measure(`${size} px, + mean of block_13_expand`, ms, features([[o["flatten_1"]!, 1], [o["block_13_expand/mean"]!, 1]], n));
      if (size === 160) {
        const flipped = await pooledFeatures(values.dir, files, size, true);
        const g = flipped.outputs;
        measure(`${size} px, mirrored copy averaged in`, ms + flipped.inferenceMs, features([[mean(o["flatten_1"]!, g["flatten_1"]!), 1]], n));
      }
    }
    console.log("ms/photo: ONNX Runtime inference alone, one thread, as measured when the features were cached (decode is extra)");
  } finally {
    await data.textEncoder.close();
  }
}

await main();
