// onnxruntime-node is installed but cannot load (a missing shared library, another libc): by
// default the image model falls back to tfjs with one warning line; asked for by name, it fails.
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { defaultImageRuntime, IMAGE_ENCODER_VERSION, openImageEncoder, type OpenedImageEncoder } from "../../src/embeddings/image-encoder.js";
import { samplePhotos } from "../support/sample-photos.js";
import { cacheDir } from "../support/cache-dir.js";
import { norm } from "../support/vectors.js";

// The package's native binding fails as it is reached, as a dlopen error would (a factory that
// throws gets its error replaced by vitest's own).
vi.mock("onnxruntime-node", () => ({
  get InferenceSession(): never {
    throw new Error("libonnxruntime.so.1: cannot open shared object file:\nNo such file or directory");
  },
}));

let encoder: OpenedImageEncoder;
const logged: string[] = [];
const warned: string[] = [];

beforeAll(async () => {
  encoder = await openImageEncoder({ log: (m) => logged.push(m), warn: (m) => warned.push(m) });
}, 120_000);

afterAll(async () => {
  await encoder?.close();
});

it("falls back to tfjs with one warning line", async () => {
  expect(defaultImageRuntime()).toBe("onnxruntime"); // the package is there; loading it fails
  expect(encoder.backend.runtime).toBe("tfjs");
  expect(encoder.version).toBe(IMAGE_ENCODER_VERSION);
  expect(warned).toHaveLength(1);
  expect(warned[0]).toMatch(/^onnxruntime-node is installed but cannot run the image model \(.*libonnxruntime\.so\.1.*\); using tfjs/);
  expect(warned[0]).not.toContain("\n");
  expect(logged.filter((m) => m.includes("onnxruntime"))).toEqual([]);
  const v = await encoder.encode((await samplePhotos(cacheDir)).coffee);
  expect(norm(v)).toBeCloseTo(1, 5);
});

it("fails instead of falling back when ONNX Runtime is asked for by name", async () => {
  const before = warned.length;
  await expect(openImageEncoder({ runtime: "onnxruntime", warn: (m) => warned.push(m) })).rejects.toThrow(/libonnxruntime/);
  expect(warned.length).toBe(before);
});
