import { createHash } from "node:crypto";
import { ImageFetchError } from "./fetch/index.js";
import type { FetchedImage } from "./fetch/index.js";
import { storedCopy, UndecodableImageError } from "./image-normaliser.js";
import type { ObjectStore } from "./object-store.js";
import type { ProductEncoders } from "./product-encoders.js";
import type { ClaimedProduct, ProcessedResult } from "./processing-queue.js";

export interface ProcessorDeps {
  fetchImage: (url: string, signal?: AbortSignal) => Promise<FetchedImage>;
  objects: ObjectStore;
  encoders: ProductEncoders;
}

/**
 * Part of the embeddings' version: what the encoders are given. "as-fetched": the downloaded file
 * (before: the re-encoded stored copy, whose pixels differ slightly), so vectors of older products
 * are recomputed once.
 */
export const ENCODER_INPUT_VERSION = "input-as-fetched";

/** Milliseconds spent per phase, for the ingest benchmark and the logs. */
export interface PhaseTimings {
  download: number;
  decode: number;
  embed: number;
  store: number;
}

export type Outcome =
  | { kind: "processed"; result: ProcessedResult; timings: PhaseTimings }
  | { kind: "retry"; reason: string; timings: PhaseTimings }
  | { kind: "failed"; reason: string; timings: PhaseTimings };

/**
 * Turns one claimed product into stored image + embeddings, or says why not. Failures that may
 * pass (timeouts, 5xx) come back as "retry"; ones that will not (404, not an image) as "failed".
 */
export async function processProduct(job: ClaimedProduct, deps: ProcessorDeps, signal?: AbortSignal): Promise<Outcome> {
  const timings: PhaseTimings = { download: 0, decode: 0, embed: 0, store: 0 };
  const timed = async <T>(phase: keyof PhaseTimings, work: () => Promise<T> | T): Promise<T> => {
    const start = performance.now();
    try {
      return await work();
    } finally {
      timings[phase] += performance.now() - start;
    }
  };
  const version = deps.encoders.version;
  const text = await timed("embed", () => deps.encoders.encodeText(job.descriptor));
  const previous = job.previous?.modelVersion === version ? job.previous : undefined;
  const keepImage = (fetchedImageUrl: string): Outcome => ({
    kind: "processed",
    result: { objectKey: previous!.objectKey, fetchedImageUrl, imageSha256: previous!.imageSha256, embeddings: { modelVersion: version, text } },
    timings,
  });

  // Same URL as last time, embeddings of the current model stored: nothing to download.
  if (previous && previous.fetchedImageUrl === job.imageUrl) return keepImage(job.imageUrl);

  let fetched: FetchedImage;
  try {
    fetched = await timed("download", () => deps.fetchImage(job.imageUrl, signal));
  } catch (error) {
    if (error instanceof ImageFetchError) {
      return { kind: error.kind === "transient" ? "retry" : "failed", reason: error.message, timings };
    }
    throw error;
  }
  const imageSha256 = createHash("sha256").update(fetched.bytes).digest("hex");
  // A new URL serving the very same bytes: keep the stored copy and vectors.
  if (previous && previous.imageSha256 === imageSha256) return keepImage(job.imageUrl);

  const objectKey = deps.objects.keyFor(job.catalogId, imageSha256);
  let embedded: { image: Float32Array; colour: Float32Array };
  try {
    // The encoders read the photo as fetched, not the stored copy: a full-size JPEG is then decoded
    // once, straight at the model's small input size (libvips shrinks while decoding), and the
    // vectors do not depend on how the copy was stored.
    const copy = await timed("decode", () => storedCopy(fetched.bytes));
    await timed("store", () => deps.objects.put(objectKey, copy.bytes, "image/jpeg"));
    embedded = await timed("embed", () => deps.encoders.encodeImage(fetched.bytes));
  } catch (error) {
    if (error instanceof UndecodableImageError) return { kind: "failed", reason: error.message, timings };
    throw error;
  }
  const { image, colour } = embedded;
  return {
    kind: "processed",
    result: { objectKey, fetchedImageUrl: job.imageUrl, imageSha256, embeddings: { modelVersion: version, image, colour, text } },
    timings,
  };
}
