import * as tf from "@tensorflow/tfjs-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { colourProfile, ImageDecodeError } from "../../src/embeddings/index.js";
import {
  defaultImageRuntime,
  IMAGE_ENCODER_VERSION,
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
  // onnxruntime-node is an optional dependency installed by default (`ONNXRUNTIME_NODE_INSTALL=skip
  // npm ci`): an install that dropped it must fail here, not skip the tests that need it.
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
