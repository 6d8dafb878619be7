import { afterAll, beforeAll, expect, it } from "vitest";
import { IMAGE_ENCODER_VERSION, loadEncoders, TEXT_ENCODER_VERSION, type Encoders } from "../../src/embeddings/index.js";
import { samplePhotos } from "../support/sample-photos.js";
import { cacheDir } from "../support/cache-dir.js";
import { norm } from "../support/vectors.js";

let encoders: Encoders;
const logged: string[] = [];

beforeAll(async () => {
  const rssBefore = process.memoryUsage.rss();
  const t0 = performance.now();
  encoders = await loadEncoders({ cacheDir, log: (m) => logged.push(m) });
  const ms = performance.now() - t0;
  const rss = process.memoryUsage.rss();
  console.log(
    `loadEncoders: ${Math.round(ms)} ms, RSS ${Math.round(rss / 2 ** 20)} MB (+${Math.round((rss - rssBefore) / 2 ** 20)} MB)\n  ${logged.join("\n  ")}`,
  );
}, 300_000);

afterAll(async () => {
  await encoders?.close();
});

it("pairs the image and text encoders under one stable version", () => {
  expect(encoders.version).toBe(`${IMAGE_ENCODER_VERSION}+glove100-int8-sif-pc1-v1`);
  expect(encoders.version).toBe(`${IMAGE_ENCODER_VERSION}+${TEXT_ENCODER_VERSION}`);
  expect(encoders.image.version).toBe(IMAGE_ENCODER_VERSION);
  expect(encoders.text.version).toBe(TEXT_ENCODER_VERSION);
  expect(logged.some((m) => /image encoder loaded in \d+ ms/.test(m))).toBe(true);
  expect(logged.some((m) => /text encoder loaded in \d+ ms/.test(m))).toBe(true);
  // tfjs-node is not installed here: looking for it must stay silent
  expect(logged.filter((m) => m.includes("tfjs-node"))).toEqual([]);
});

it("encodes images and text", async () => {
  const photos = await samplePhotos(cacheDir);
  const image = await encoders.image.encode(photos.coffee);
  expect(image.length).toBe(encoders.image.dimensions);
  expect(norm(image)).toBeCloseTo(1, 5);
  const text = encoders.text.encode("espresso coffee cup");
  expect(text.length).toBe(encoders.text.dimensions);
  expect(norm(text)).toBeCloseTo(1, 5);
});

it("shares one model between loads and frees it after the last close", async () => {
  const second = await loadEncoders({ cacheDir });
  const photos = await samplePhotos(cacheDir);
  const a = await second.image.encode(photos.rocket);
  // close() lets calls already made finish
  const pending = second.image.encode(photos.coffee);
  const closing = second.close();
  expect((await pending).length).toBe(1280);
  await closing;
  await second.close(); // idempotent
  await expect(second.image.encode(photos.rocket)).rejects.toThrow(/closed/);
  // the first set is unaffected
  expect(Array.from(await encoders.image.encode(photos.rocket))).toEqual(Array.from(a));
});
