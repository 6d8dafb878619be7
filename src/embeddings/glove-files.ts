// The compact word-vector files under <cacheDir>/glove100/, derived once from the wink JSON:
//   vectors.<tag>.bin  float32 scale per row, then int8 [rows x dimensions] (little-endian)
//   vocab.<tag>.txt    one word per line, line i = row i (GloVe frequency order)
//   meta.<tag>.json    sizes, source, and the common direction; written last, so its presence
//                      means the other two are complete
// Each file is written under a temporary name and renamed into place. The tag names the recipe
// (quantisation, tokenizer, weighting, generic phrases); changing any of them needs a new tag,
// which also changes the text encoder's version.
import { readFile, stat } from "node:fs/promises";
import { writeAtomically } from "./atomic-file.js";
import path from "node:path";
import { WordVectors } from "./word-vectors.js";

export const TEXT_FORMAT_TAG = "v1";

export interface GloveMeta {
  format: "vitrine-glove-int8";
  tag: string;
  source: string;
  rows: number;
  dimensions: number;
  vectorsBytes: number;
  vocabBytes: number;
  /** Unit vector projected out of every sentence vector (see sentence-vector.ts). */
  commonDirection: number[];
  createdAt: string;
}

export interface CompactGlove {
  vectors: WordVectors;
  commonDirection: Float64Array;
  meta: GloveMeta;
}

export function gloveDir(cacheDir: string): string {
  return path.join(path.resolve(cacheDir), "glove100");
}

export function glovePaths(dir: string) {
  return {
    vectors: path.join(dir, `vectors.${TEXT_FORMAT_TAG}.bin`),
    vocab: path.join(dir, `vocab.${TEXT_FORMAT_TAG}.txt`),
    meta: path.join(dir, `meta.${TEXT_FORMAT_TAG}.json`),
    lock: path.join(dir, `convert.${TEXT_FORMAT_TAG}.lock`),
  };
}

/** The meta of a complete set of files, or undefined when any is missing or does not match it. */
export async function readCompleteMeta(dir: string): Promise<GloveMeta | undefined> {
  const p = glovePaths(dir);
  let meta: GloveMeta;
  try {
    meta = JSON.parse(await readFile(p.meta, "utf8")) as GloveMeta;
  } catch {
    return undefined;
  }
  if (meta.format !== "vitrine-glove-int8" || meta.tag !== TEXT_FORMAT_TAG) return undefined;
  const size = (file: string) => stat(file).then((s) => s.size, () => -1);
  if ((await size(p.vectors)) !== meta.vectorsBytes || (await size(p.vocab)) !== meta.vocabBytes) return undefined;
  return meta;
}

export async function writeCompactGlove(
  dir: string,
  data: { words: readonly string[]; quantised: Int8Array; scales: Float32Array; commonDirection: Float64Array; source: string },
): Promise<GloveMeta> {
  const p = glovePaths(dir);
  const { words, quantised, scales } = data;
  const bin = Buffer.concat([bytesOf(scales), bytesOf(quantised)]);
  const vocab = Buffer.from(words.join("\n") + "\n", "utf8");
  const meta: GloveMeta = {
    format: "vitrine-glove-int8",
    tag: TEXT_FORMAT_TAG,
    source: data.source,
    rows: words.length,
    dimensions: quantised.length / words.length,
    vectorsBytes: bin.length,
    vocabBytes: vocab.length,
    commonDirection: Array.from(data.commonDirection),
    createdAt: new Date().toISOString(),
  };
  await writeAtomically(p.vectors, bin);
  await writeAtomically(p.vocab, vocab);
  await writeAtomically(p.meta, Buffer.from(JSON.stringify(meta, null, 1)));
  return meta;
}

export async function readCompactGlove(dir: string): Promise<CompactGlove> {
  const meta = await readCompleteMeta(dir);
  if (!meta) throw new Error(`no complete compact word vectors in ${dir}`);
  const p = glovePaths(dir);
  const [bin, vocab] = await Promise.all([readFile(p.vectors), readFile(p.vocab, "utf8")]);
  const words = vocab.split("\n", meta.rows);
  if (words.length !== meta.rows) throw new Error(`${p.vocab}: ${words.length} words, meta says ${meta.rows}`);
  // A large readFile result is its own 0-offset ArrayBuffer; copy only if it ever is not aligned.
  const aligned = bin.byteOffset % 4 === 0 ? bin : Buffer.from(bin);
  const scales = new Float32Array(aligned.buffer, aligned.byteOffset, meta.rows);
  const quantised = new Int8Array(aligned.buffer, aligned.byteOffset + meta.rows * 4, meta.rows * meta.dimensions);
  return {
    vectors: new WordVectors(meta.dimensions, words, quantised, scales),
    commonDirection: Float64Array.from(meta.commonDirection),
    meta,
  };
}

function bytesOf(a: Int8Array | Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}
