import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { colourProfile, ImageDecodeError } from "../../src/embeddings/index.js";
import {
  defaultImageRuntime,
  IMAGE_ENCODER_VERSION,
  imageEncoderVersion,
  openImageEncoder,
  type OpenedImageEncoder,
} from "../../src/embeddings/image-encoder.js";
import { samplePhotos, type SamplePhotoName } from "../support/sample-photos.js";
import { cacheDir } from "../support/cache-dir.js";
import { cosine, norm } from "../support/vectors.js";

let encoder: OpenedImageEncoder;
let photos: Record<SamplePhotoName, Buffer>;

beforeAll(async () => {
  photos = await samplePhotos(cacheDir);
  const t0 = performance.now();
  encoder = await openImageEncoder();
  console.log(
    `image encoder ${encoder.version} loaded in ${Math.round(performance.now() - t0)} ms ` +
      `(${encoder.backend.name}${encoder.backend.simd ? " simd" : ""})`,
  );
}, 120_000);

afterAll(async () => {
  await encoder?.close();
});

describe("image encoder", () => {
  // onnxruntime-node is an optional dependency installed by default (plain `npm ci`; its install
  // script is denied in allowScripts): an install that dropped it must fail here, not skip the
  // tests that need it.
  it("runs on ONNX Runtime by default", () => {
    expect(defaultImageRuntime()).toBe("onnxruntime");
    expect(encoder.backend).toMatchObject({ runtime: "onnxruntime", name: "onnxruntime" });
  });

  it("returns unit-length vectors of the declared dimensions under a stable version", async () => {
    expect(IMAGE_ENCODER_VERSION).toBe("mnv2-nsfwjs4.3-fused-160-sqrt-v1");
    expect(encoder.backend.runtime).toBe(defaultImageRuntime());
    expect(encoder.version).toBe(IMAGE_ENCODER_VERSION);
    expect(encoder.dimensions).toBe(1280);
    for (const image of Object.values(photos)) {
      const v = await encoder.encode(image);
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(1280);
      expect(norm(v)).toBeCloseTo(1, 5);
      expect(v.every((x) => Number.isFinite(x) && x >= 0)).toBe(true);
    }
  });

  it("places two views of one motorcycle closer together than a motorcycle and a cat", async () => {
    const left = await encoder.encode(photos.motorcycle_left);
    const right = await encoder.encode(photos.motorcycle_right);
    const cat = await encoder.encode(photos.chelsea);
    const sameObject = cosine(left, right);
    console.log(`cos(motorcycle left, right) ${sameObject.toFixed(3)}; cos(motorcycle, cat) ${cosine(left, cat).toFixed(3)}`);
    expect(sameObject).toBeGreaterThan(0.9);
    expect(sameObject).toBeGreaterThan(cosine(left, cat) + 0.2);
    expect(sameObject).toBeGreaterThan(cosine(right, cat) + 0.2);
  });

  it("is deterministic", async () => {
    const a = await encoder.encode(photos.coffee);
    await encoder.encode(photos.rocket);
    const b = await encoder.encode(photos.coffee);
    expect(Array.from(b)).toEqual(Array.from(a));
  });

  it("gives concurrent calls the same answers as sequential ones", async () => {
    const names = Object.keys(photos) as SamplePhotoName[];
    const sequential: Float32Array[] = [];
    for (const n of names) sequential.push(await encoder.encode(photos[n]));
    const concurrent = await Promise.all(names.map((n) => encoder.encode(photos[n])));
    concurrent.forEach((v, i) => expect(Array.from(v)).toEqual(Array.from(sequential[i]!)));
  });

  it("reads JPEG, WebP, GIF, AVIF and transparent PNG alike", async () => {
    const reference = await encoder.encode(photos.chelsea);
    const cat = sharp(photos.chelsea);
    const variants = {
      jpeg: await cat.clone().jpeg({ quality: 90 }).toBuffer(),
      webp: await cat.clone().webp({ quality: 90 }).toBuffer(),
      gif: await cat.clone().gif().toBuffer(),
      avif: await cat.clone().avif({ quality: 70 }).toBuffer(),
      png_with_alpha: await cat.clone().ensureAlpha().png().toBuffer(),
    };
    for (const [format, bytes] of Object.entries(variants)) {
      const similarity = cosine(reference, await encoder.encode(bytes));
      expect(similarity, format).toBeGreaterThan(0.9);
    }
  });

  it("gives encode's vector and colourProfile's histogram from one decode", async () => {
    for (const image of [photos.chelsea, photos.rocket]) {
      const both = await encoder.encodeWithColour(image);
      expect(Array.from(both.image)).toEqual(Array.from(await encoder.encode(image)));
      expect(Array.from(both.colour)).toEqual(Array.from(await colourProfile(image)));
    }
    await expect(encoder.encodeWithColour(Buffer.from("not an image"))).rejects.toBeInstanceOf(ImageDecodeError);
  });

  it("rejects bytes that are not an image with ImageDecodeError", async () => {
    await expect(encoder.encode(Buffer.from("definitely not an image"))).rejects.toBeInstanceOf(ImageDecodeError);
    // and keeps working afterwards
    expect((await encoder.encode(photos.rocket)).length).toBe(1280);
  });

  it("leaves none of Emscripten's rethrowing process handlers installed", () => {
    const installed = [...process.listeners("uncaughtException"), ...process.listeners("unhandledRejection")].map(String);
    expect(installed.filter((source) => /throw reason|ExitStatus/.test(source))).toEqual([]);
  });
});

// TensorFlow.js (wasm) defines the model and is the fallback: forced, it must give ONNX Runtime's
// vectors up to float rounding, under the same version.
describe("the tfjs runtime next to ONNX Runtime", () => {
  let tfjs: OpenedImageEncoder;
  beforeAll(async () => {
    tfjs = await openImageEncoder({ runtime: "tfjs" });
  }, 120_000);
  afterAll(async () => {
    await tfjs?.close();
  });

  it("runs on tfjs under the same version", () => {
    expect(tfjs.backend.runtime).toBe("tfjs");
    expect(tfjs.version).toBe(IMAGE_ENCODER_VERSION);
    expect(tfjs.version).toBe(encoder.version);
  });

  it("agrees with ONNX Runtime to float rounding", async () => {
    for (const [name, image] of Object.entries(photos)) {
      const [a, b] = [await encoder.encode(image), await tfjs.encode(image)];
      expect(1 - cosine(a, b), name).toBeLessThan(1e-6);
    }
  });

  it("is deterministic and gives concurrent calls the sequential answers", async () => {
    const names = Object.keys(photos) as SamplePhotoName[];
    const sequential: Float32Array[] = [];
    for (const n of names) sequential.push(await tfjs.encode(photos[n]));
    const concurrent = await Promise.all(names.map((n) => tfjs.encode(photos[n])));
    concurrent.forEach((v, i) => expect(Array.from(v)).toEqual(Array.from(sequential[i]!)));
  });

  it("does not leak tensors", async () => {
    await tfjs.encode(photos.astronaut);
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) await tfjs.encodeWithColour(photos.astronaut);
    expect(tf.memory().numTensors).toBe(before);
  });
});

// IMAGE_MODEL=mobilenet+inception: InceptionV3's features at 224 px beside MobileNet's, on either
// runtime. The InceptionV3 graph ONNX Runtime runs is written by onnx-inception.ts from the Keras
// file; tfjs-layers reads that file as it is, so their agreement checks the conversion.
describe("the quality model, MobileNetV2 and InceptionV3", () => {
  let quality: OpenedImageEncoder;
  let qualityTfjs: OpenedImageEncoder;
  beforeAll(async () => {
    quality = await openImageEncoder({ model: "mobilenet+inception" });
    qualityTfjs = await openImageEncoder({ model: "mobilenet+inception", runtime: "tfjs" });
  }, 120_000);
  afterAll(async () => {
    await quality?.close();
    await qualityTfjs?.close();
  });

  it("has its own version and 3,328 dimensions, one runtime for both networks", () => {
    expect(quality.version).toBe("mnv2-nsfwjs4.3-fused-160-sqrt-v1+inc3-nsfwjs4.3-mixed10-224-sqrt-concat-v1");
    expect(imageEncoderVersion("mobilenet+inception")).toBe(quality.version);
    expect(imageEncoderVersion("mobilenet")).toBe(IMAGE_ENCODER_VERSION);
    expect(quality.dimensions).toBe(3328);
    expect(quality.model).toBe("mobilenet+inception");
    expect(quality.backend.runtime).toBe("onnxruntime");
    expect(qualityTfjs.backend.runtime).toBe("tfjs");
    expect(qualityTfjs.version).toBe(quality.version);
  });

  it("puts the default model's vector and InceptionV3's side by side at equal weight", async () => {
    for (const image of Object.values(photos)) {
      const v = await quality.encode(image);
      expect(v.length).toBe(3328);
      expect(norm(v)).toBeCloseTo(1, 5);
      expect(v.every((x) => Number.isFinite(x) && x >= 0)).toBe(true);
      const [mobileNet, inception] = [v.subarray(0, 1280), v.subarray(1280)];
      expect(norm(mobileNet)).toBeCloseTo(Math.SQRT1_2, 5);
      expect(norm(inception)).toBeCloseTo(Math.SQRT1_2, 5);
      expect(cosine(mobileNet, await encoder.encode(image))).toBeGreaterThan(1 - 1e-6);
    }
  });

  it("sees two views of one motorcycle as alike in InceptionV3's part too", async () => {
    const names = Object.keys(photos) as SamplePhotoName[];
    const inception = new Map<SamplePhotoName, Float32Array>();
    for (const name of names) inception.set(name, (await quality.encode(photos[name])).subarray(1280));
    const nearest = (name: SamplePhotoName) =>
      names.filter((other) => other !== name).sort((a, b) => cosine(inception.get(name)!, inception.get(b)!) - cosine(inception.get(name)!, inception.get(a)!))[0];
    const [left, right, cat] = (["motorcycle_left", "motorcycle_right", "chelsea"] as const).map((n) => inception.get(n)!);
    console.log(`InceptionV3: cos(motorcycle left, right) ${cosine(left!, right!).toFixed(3)}; cos(motorcycle, cat) ${cosine(left!, cat!).toFixed(3)}`);
    // Its square-rooted features are not centred, so every pair is fairly alike; the order is what counts.
    expect(nearest("motorcycle_left")).toBe("motorcycle_right");
    expect(nearest("motorcycle_right")).toBe("motorcycle_left");
    expect(cosine(left!, right!)).toBeGreaterThan(cosine(left!, cat!) + 0.05);
  });

  it("gives the same vectors on tfjs (the Keras file read as it is) as on ONNX Runtime (the converted graph)", async () => {
    for (const [name, image] of Object.entries(photos)) {
      const [a, b] = [await quality.encode(image), await qualityTfjs.encode(image)];
      expect(1 - cosine(a.subarray(1280), b.subarray(1280)), name).toBeLessThan(1e-6);
      expect(1 - cosine(a, b), name).toBeLessThan(1e-6);
    }
  });

  it("reads the colour profile from MobileNet's input, as the default model does", async () => {
    const [withQuality, withDefault] = [await quality.encodeWithColour(photos.rocket), await encoder.encodeWithColour(photos.rocket)];
    expect(Array.from(withQuality.colour)).toEqual(Array.from(withDefault.colour));
    expect(Array.from(withQuality.image)).toEqual(Array.from(await quality.encode(photos.rocket)));
    await expect(quality.encode(Buffer.from("not an image"))).rejects.toBeInstanceOf(ImageDecodeError);
  });
});

describe("InceptionV3's converted graph in the cache directory", () => {
  it("is written once, loaded from there, and written again when damaged", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "vitrine-graph-"));
    try {
      const reference = await openImageEncoder({ model: "mobilenet+inception" });
      const expected = await reference.encode(photos.coffee);
      await reference.close();
      const logs: string[] = [];
      const vectorWith = async () => {
        const encoder = await openImageEncoder({ model: "mobilenet+inception", cacheDir: dir, log: (m) => logs.push(m) });
        try {
          return await encoder.encode(photos.coffee);
        } finally {
          await encoder.close();
        }
      };
      expect(Array.from(await vectorWith())).toEqual(Array.from(expected));
      const [file] = readdirSync(join(dir, "models"));
      expect(file).toMatch(/^inception_v3-nsfwjs4\.3\.0-mixed10-224-.*\.onnx$/);
      expect(logs.filter((l) => l.includes("converted into"))).toHaveLength(1);
      const written = statSync(join(dir, "models", file!)).mtimeMs;

      expect(Array.from(await vectorWith())).toEqual(Array.from(expected));
      expect(logs.filter((l) => l.includes("converted into"))).toHaveLength(1);
      expect(statSync(join(dir, "models", file!)).mtimeMs).toBe(written);

      writeFileSync(join(dir, "models", file!), "not an onnx model");
      expect(Array.from(await vectorWith())).toEqual(Array.from(expected));
      expect(logs.some((l) => l.startsWith("cannot load"))).toBe(true);
      expect(statSync(join(dir, "models", file!)).size).toBeGreaterThan(80e6);
      expect(readdirSync(join(dir, "models"))).toEqual([file]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
