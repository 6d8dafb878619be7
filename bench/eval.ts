// Retrieval-quality evaluation on a labelled set of product photos (default ../shared/eval/fashion-dev):
// text-to-text, image-to-image and text-to-image (through the text-image map) precision@10, and
// zero-shot article-type classification. Not a test: numbers, not verdicts.
//
//   npx tsx bench/eval.ts [--dir ../shared/eval/fashion-dev] [--limit N] [--lambda 1] [--colour-weight 1]
//                         [--landmarks 1000 (0: a linear map)] [--cv]
//                         [--scales 1,4] [--skip-service | --service-only [--headline-only]]
//                         [--mysql-url mysql://root@127.0.0.1:3306] [--redis-url URL]
//                         [--image-model mobilenet | mobilenet+inception]
//
// --scales: photo sizes, as factors of the files' own (fashion-dev's 225x300 thumbnails; 4:
// 900x1200, enlarged in memory before encoding, as shops' photos are larger); at the first scale
// everything, at the others the map's tables and the four measures through the service.
// --headline-only: through the service, the four measures alone at every scale.
// --image-model: the networks that embed the photos, as the service's IMAGE_MODEL (default mobilenet).
//
// Last, the same photos and titles go through the running service (eval-service.ts: REST, Redis 8,
// MariaDB), with lexical matching off and on: brand names, exact titles, misspelt brands, brand
// prefixes, and the photo-only numbers. It provisions a Redis 8 of its own unless --redis-url is
// given, and uses (then drops) a database of its own. --skip-service leaves it out.
//
// --cv also prints 5-fold cross-validation on the described half alone (titles known), the kind of
// evidence the map's constants are chosen on: how well a held-out photo's output ranks its own
// title among the fold's titles, and the reverse (mean reciprocal rank).
//
// Photos are read where they are. Their encodings (image features, colour profile, title vector)
// are cached under <CACHE_DIR>/eval/, keyed by the encoders' versions and the file list, so reruns
// skip the image model entirely.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { colourProfile, IMAGE_MODELS, imageEncoderVersion, loadEncoders, TEXT_ENCODER_VERSION } from "../src/embeddings/index.js";
import type { Encoders, ImageModel, SentenceEncoder } from "../src/embeddings/index.js";
import { rowDots } from "../src/embeddings/linear-algebra.js";
import { openSentenceEncoder } from "../src/embeddings/text-encoder.js";
import { DEFAULT_COLOUR_WEIGHT, DEFAULT_KERNEL, DEFAULT_LAMBDA, DEFAULT_WHITENING } from "../src/embeddings/text-image-map.js";
import { fitTextImageMap } from "../src/embeddings/index.js";
import type { FitTextImageMapOptions, TextImageMap } from "../src/embeddings/index.js";
import { dot, l2NormaliseInPlace } from "../src/embeddings/vector-math.js";
import { recommendationVisual } from "../src/search/visual-space.js";
import { evaluateThroughService, weightedF1 } from "./eval-service.js";
import type { HeadlineMeasures } from "./eval-service.js";

interface Item {
  id: string;
  gender: string;
  articleType: string;
  baseColour: string;
  productDisplayName: string;
  image: string;
}

interface Dataset {
  items: Item[];
  image: Float32Array[];
  colour: Float32Array[];
  text: Float32Array[];
  /** How the encodings were obtained: measured now, or read from the cache (with the original timings). */
  cache: { file: string; hit: boolean };
  timings: { imageLoadMs: number; imageMsPerPhoto: number; colourMsPerPhoto: number; textMsPerTitle: number; wallMs: number };
  textEncoder: SentenceEncoder & { close(): Promise<void> };
}

export const DEFAULT_DIR = join(import.meta.dirname, "..", "..", "shared", "eval", "fashion-dev");
export const CACHE_DIR = process.env.CACHE_DIR ?? join(homedir(), ".cache", "vitrine");

// ---------------------------------------------------------------------------------------------
// Encodings, cached

interface CacheHeader {
  n: number;
  imageDimensions: number;
  colourDimensions: number;
  textDimensions: number;
  ids: string[];
  timings: Dataset["timings"];
}

/**
 * Shops upload photos larger than fashion-dev's 225x300 thumbnails: with `scale` each photo is
 * enlarged (Lanczos) by that factor and re-encoded as a JPEG of quality 90 in memory before it is
 * encoded, e.g. 4: 900x1200. Nothing is written but the encodings cache.
 */
async function photoBytes(file: string, scale: number): Promise<Buffer> {
  const bytes = await readFile(file);
  if (scale === 1) return bytes;
  const image = sharp(bytes);
  const { width, height } = await image.metadata();
  return image.resize(Math.round(width! * scale), Math.round(height! * scale), { kernel: "lanczos3" }).jpeg({ quality: 90 }).toBuffer();
}

export async function loadDataset(
  dir: string,
  limit: number | undefined,
  log: (m: string) => void = () => undefined,
  scale = 1,
  imageModel: ImageModel = "mobilenet",
): Promise<Dataset> {
  const lines = (await readFile(join(dir, "items.jsonl"), "utf8")).split("\n").filter((l) => l.trim());
  const items = lines.map((l) => JSON.parse(l) as Item).slice(0, limit ?? Infinity);
  // Key: encoder versions, the colour profile's source (it has no version of its own), and every
  // photo's name, size and mtime plus every title.
  const hash = createHash("sha256");
  hash.update(`${imageEncoderVersion(imageModel)}\n${TEXT_ENCODER_VERSION}\n`);
  if (scale !== 1) hash.update(`scale ${scale} lanczos3 q90\n`);
  for (const f of ["colour-profile.ts", "colour-names.ts", "decode-rgb.ts"]) {
    hash.update(await readFile(join(import.meta.dirname, "..", "src", "embeddings", f)));
  }
  for (const item of items) {
    const s = await stat(join(dir, item.image));
    hash.update(`${item.id}\t${item.image}\t${s.size}\t${s.mtimeMs}\t${item.productDisplayName}\n`);
  }
  const key = hash.digest("hex").slice(0, 20);
  const file = join(CACHE_DIR, "eval", `encodings-${key}.bin`);
  const cached = await readCache(file);
  if (cached) {
    log(`encodings read from ${file}`);
    const textEncoder = await openSentenceEncoder({ cacheDir: CACHE_DIR });
    return { items, ...cached, cache: { file, hit: true }, textEncoder };
  }

  log(`encoding ${items.length} photos and titles (cache miss: ${file})`);
  const started = performance.now();
  const t0 = performance.now();
  const encoders: Encoders = await loadEncoders({ cacheDir: CACHE_DIR, log, imageModel });
  const imageLoadMs = performance.now() - t0;
  const image: Float32Array[] = new Array(items.length);
  const colour: Float32Array[] = new Array(items.length);
  let imageMs = 0;
  let colourMs = 0;
  try {
    // Colour first, then the image model, one photo at a time: each phase's time is its own.
    for (let i = 0; i < items.length; i++) {
      const bytes = await photoBytes(join(dir, items[i]!.image), scale);
      const c0 = performance.now();
      colour[i] = await colourProfile(bytes);
      const c1 = performance.now();
      image[i] = await encoders.image.encode(bytes);
      imageMs += performance.now() - c1;
      colourMs += c1 - c0;
      if ((i + 1) % 250 === 0) log(`  ${i + 1}/${items.length}`);
    }
    const x0 = performance.now();
    const text = items.map((item) => encoders.text.encode(item.productDisplayName));
    const textMs = performance.now() - x0;
    const timings = {
      imageLoadMs,
      imageMsPerPhoto: imageMs / items.length,
      colourMsPerPhoto: colourMs / items.length,
      textMsPerTitle: textMs / items.length,
      wallMs: performance.now() - started,
    };
    await writeCache(file, { n: items.length, imageDimensions: encoders.image.dimensions, colourDimensions: colour[0]!.length, textDimensions: encoders.text.dimensions, ids: items.map((i) => i.id), timings }, image, colour, text);
    const textEncoder = await openSentenceEncoder({ cacheDir: CACHE_DIR });
    return { items, image, colour, text, timings, cache: { file, hit: false }, textEncoder };
  } finally {
    await encoders.close();
  }
}

async function readCache(file: string): Promise<Pick<Dataset, "image" | "colour" | "text" | "timings"> | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch {
    return undefined;
  }
  const headerLength = bytes.readUInt32LE(0);
  const header = JSON.parse(bytes.subarray(4, 4 + headerLength).toString("utf8")) as CacheHeader;
  let offset = (4 + headerLength + 3) & ~3;
  const floats = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + bytes.length));
  offset = 0;
  const take = (count: number, dims: number) =>
    Array.from({ length: count }, () => {
      const v = floats.slice(offset, offset + dims);
      offset += dims;
      return v;
    });
  const image = take(header.n, header.imageDimensions);
  const colour = take(header.n, header.colourDimensions);
  const text = take(header.n, header.textDimensions);
  if (offset !== floats.length) return undefined;
  return { image, colour, text, timings: header.timings };
}

async function writeCache(file: string, header: CacheHeader, ...groups: Float32Array[][]): Promise<void> {
  const head = Buffer.from(JSON.stringify(header), "utf8");
  const start = (4 + head.length + 3) & ~3;
  const total = groups.reduce((s, g) => s + g.reduce((t, v) => t + v.length, 0), 0);
  const out = Buffer.alloc(start + 4 * total);
  out.writeUInt32LE(head.length, 0);
  head.copy(out, 4);
  let o = start;
  for (const g of groups) for (const v of g) for (const x of v) o = out.writeFloatLE(x, o);
  await mkdir(join(CACHE_DIR, "eval"), { recursive: true });
  await writeFile(`${file}.tmp`, out);
  await rename(`${file}.tmp`, file);
}

// ---------------------------------------------------------------------------------------------
// Metrics

function normalised(v: ArrayLike<number>): Float32Array {
  return l2NormaliseInPlace(Float32Array.from(v));
}

function concatWeighted(a: Float32Array, b: Float32Array, weight: number): Float32Array {
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  for (let i = 0; i < b.length; i++) out[a.length + i] = weight * b[i]!;
  return normalised(out);
}

function stack(vectors: readonly Float32Array[]): { m: Float64Array; dims: number } {
  const dims = vectors[0]?.length ?? 0;
  const m = new Float64Array(vectors.length * dims);
  vectors.forEach((v, i) => m.set(v, i * dims));
  return { m, dims };
}

/** Indices of the k highest scores, best first, skipping `exclude`. */
export function topK(scores: ArrayLike<number>, k: number, exclude = -1): number[] {
  const best: number[] = [];
  for (let i = 0; i < scores.length; i++) {
    if (i === exclude) continue;
    const s = scores[i]!;
    if (best.length === k && s <= scores[best[k - 1]!]!) continue;
    let p = best.length < k ? best.length : k - 1;
    if (best.length < k) best.push(i);
    while (p > 0 && scores[best[p - 1]!]! < s) {
      best[p] = best[p - 1]!;
      p--;
    }
    best[p] = i;
  }
  return best;
}

type Label = (item: Item) => string;
export const byType: Label = (i) => i.articleType;
export const byColour: Label = (i) => i.baseColour;

/**
 * Leave-one-out precision@k within one collection: each vector (skipping all-zero ones) queries
 * all others. Returns the mean, per label function.
 */
export function selfPrecisionAtK(vectors: readonly Float32Array[], items: readonly Item[], labels: readonly Label[], k = 10): number[] {
  const n = vectors.length;
  const { m, dims } = stack(vectors);
  const sims = rowDots(m, n, dims);
  const sums = labels.map(() => 0);
  let queries = 0;
  for (let q = 0; q < n; q++) {
    if (!vectors[q]!.some((x) => x !== 0)) continue;
    queries++;
    const top = topK(sims.subarray(q * n, (q + 1) * n), k, q);
    labels.forEach((label, li) => {
      const want = label(items[q]!);
      sums[li]! += top.filter((j) => label(items[j]!) === want).length / k;
    });
  }
  return sums.map((s) => s / queries);
}

/** Precision@k of queries against a corpus: the share of each query's k nearest that match its wanted labels. */
export function queryPrecisionAtK(
  queries: readonly { vector: Float32Array; want: readonly (string | undefined)[] }[],
  corpus: readonly Float32Array[],
  corpusItems: readonly Item[],
  labels: readonly Label[],
  k = 10,
): number[] {
  const sums = labels.map(() => 0);
  for (const q of queries) {
    const scores = corpus.map((c) => dot(c, q.vector));
    const top = topK(scores, k);
    labels.forEach((label, li) => {
      const want = q.want[li];
      if (want === undefined) return;
      sums[li]! += top.filter((j) => label(corpusItems[j]!) === want).length / k;
    });
  }
  return sums.map((s) => s / queries.length);
}

/** Expected weighted F1 of guessing uniformly among the classes. */
function chanceWeightedF1(truth: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const t of truth) counts.set(t, (counts.get(t) ?? 0) + 1);
  const k = counts.size;
  let total = 0;
  for (const n of counts.values()) {
    const p = n / truth.length;
    total += p * ((2 * p * (1 / k)) / (p + 1 / k));
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Words for article types and colours, as a shopper would type them

/**
 * An article type as a product title (and a shopper) names one item: singular for count nouns
 * ("Watches" -> "watch", "Tshirts" -> "t-shirt"), plural for pairs and plural-only words ("heels",
 * "jeans", "sunglasses"). Types not listed are lower-cased as they are.
 */
const ONE_ITEM: Record<string, string> = {
  Backpacks: "backpack", Belts: "belt", Bracelet: "bracelet", Caps: "cap", Clutches: "clutch", Dresses: "dress",
  Earrings: "earrings", Handbags: "handbag", Jackets: "jacket", "Kurta Sets": "kurta set", Kurtas: "kurta", Kurtis: "kurti",
  "Laptop Bag": "laptop bag", "Night suits": "night suit", Pendant: "pendant", Sarees: "saree", Scarves: "scarf",
  Shirts: "shirt", Skirts: "skirt", Stoles: "stole", Sweaters: "sweater", Sweatshirts: "sweatshirt", Ties: "tie",
  Tops: "top", Tshirts: "t-shirt", Tunics: "tunic", Wallets: "wallet", Watches: "watch",
};

type TypeNaming = "one-item" | "as-given";

export function typeQuery(articleType: string, naming: TypeNaming = "one-item"): string {
  return (naming === "one-item" ? ONE_ITEM[articleType] : undefined) ?? articleType.toLowerCase();
}

function colourQuery(baseColour: string): string {
  return baseColour.toLowerCase();
}

// ---------------------------------------------------------------------------------------------
// Text to image through the map: fitted on the described half, measured on the withheld half

interface TextImageTask {
  described: number[];
  withheld: number[];
  withheldItems: Item[];
  /** Article types with >= 10 withheld products, sorted. */
  types: string[];
  /** Positions (in withheld) of the products of those types. */
  classified: number[];
  /** [colour, type] pairs with >= 3 withheld products of a listed type. */
  pairs: [string, string][];
}

export function textImageTask(items: readonly Item[], minTypeCount = 10, minPairCount = 3): TextImageTask {
  const described = items.map((_, i) => i).filter((i) => i % 2 === 0);
  const withheld = items.map((_, i) => i).filter((i) => i % 2 === 1);
  const withheldItems = withheld.map((i) => items[i]!);
  const counts = new Map<string, number>();
  for (const item of withheldItems) counts.set(item.articleType, (counts.get(item.articleType) ?? 0) + 1);
  const types = [...counts].filter(([, n]) => n >= minTypeCount).map(([t]) => t).sort();
  const classified = withheldItems.map((item, r) => ({ item, r })).filter(({ item }) => types.includes(item.articleType)).map(({ r }) => r);
  const pairCounts = new Map<string, number>();
  for (const item of withheldItems) {
    if (!types.includes(item.articleType)) continue;
    const key = `${item.baseColour}\t${item.articleType}`;
    pairCounts.set(key, (pairCounts.get(key) ?? 0) + 1);
  }
  const pairs = [...pairCounts].filter(([, n]) => n >= minPairCount).map(([key]) => key.split("\t") as [string, string]).sort();
  return { described, withheld, withheldItems, types, classified, pairs };
}

interface TextImageScores {
  /** Zero-shot type, weighted F1, per type naming. */
  f1: Record<TypeNaming, number>;
  /** "<type>" -> withheld products: P@10 by type. */
  typeP10: number;
  /** "<colour> <type>" -> withheld products: P@10 by type, by colour, by both. */
  colourTypeP10: number[];
}

/** Scores vectors standing for the withheld products (mapped photos, or their own titles for reference). */
export function scoreTextImage(task: TextImageTask, text: QueryEncoder, vectors: readonly Float32Array[]): TextImageScores {
  const truth = task.classified.map((r) => task.withheldItems[r]!.articleType);
  const f1 = (naming: TypeNaming) => {
    const prompts = task.types.map((t) => text.encode(typeQuery(t, naming)));
    const predicted = task.classified.map((r) => task.types[argmax(prompts.map((p) => dot(p, vectors[r]!)))]!);
    return weightedF1(truth, predicted);
  };
  const typeQueries = task.types.map((t) => ({ vector: text.encode(typeQuery(t)), want: [t] }));
  const pairQueries = task.pairs.map(([colour, type]) => ({
    vector: text.encode(`${colourQuery(colour)} ${typeQuery(type)}`),
    want: [type, colour, `${colour}\t${type}`],
  }));
  const both: Label = (i) => `${i.baseColour}\t${i.articleType}`;
  return {
    f1: { "one-item": f1("one-item"), "as-given": f1("as-given") },
    typeP10: queryPrecisionAtK(typeQueries, vectors, task.withheldItems, [byType])[0]!,
    colourTypeP10: queryPrecisionAtK(pairQueries, vectors, task.withheldItems, [byType, byColour, both]),
  };
}

/** "<colour>" queries (colours with >= 10 withheld products) against the withheld products: P@10 by colour. */
export function colourPrecision(task: TextImageTask, text: QueryEncoder, vectors: readonly Float32Array[]): { p10: number; queries: number } {
  const counts = new Map<string, number>();
  for (const item of task.withheldItems) counts.set(item.baseColour, (counts.get(item.baseColour) ?? 0) + 1);
  const colours = [...counts].filter(([, n]) => n >= 10).map(([c]) => c).sort();
  const queries = colours.map((c) => ({ vector: text.encode(colourQuery(c)), want: [c] }));
  return { p10: queryPrecisionAtK(queries, vectors, task.withheldItems, [byColour])[0]!, queries: colours.length };
}

/**
 * Every product a subject of `query(i)` against `corpus` (itself excluded): the share of its 10
 * nearest of its own type, over all subjects, the described ones and the others.
 */
export function recommendationPrecision(
  items: readonly Item[],
  described: ReadonlySet<number>,
  query: (i: number) => Float32Array,
  corpus: readonly Float32Array[],
): [number, number, number] {
  const sums = [0, 0], counts = [0, 0];
  for (let i = 0; i < items.length; i++) {
    const q = query(i);
    const top = topK(corpus.map((c) => dot(c, q)), 10, i);
    const k = described.has(i) ? 0 : 1;
    sums[k]! += top.filter((j) => items[j]!.articleType === items[i]!.articleType).length / 10;
    counts[k]!++;
  }
  return [(sums[0]! + sums[1]!) / items.length, sums[0]! / Math.max(counts[0]!, 1), sums[1]! / Math.max(counts[1]!, 1)];
}

/**
 * Recommendations in a catalog described on the even half, as the service makes them with
 * visualWeight 1: every product a subject, the share of its 10 nearest of its own type, for
 * described and undescribed subjects. What each choice gives: the raw photo features, the mapped
 * photos, the described subject's descriptor in its query (searcher.ts: what ships), and
 * the descriptors of every described product blended into its indexed photo (rejected).
 */
function recommendationTable(data: Dataset, task: TextImageTask, map: TextImageMap): void {
  const items = data.items;
  const described = new Set(task.described);
  const mapped = items.map((_, i) => map.apply(data.image[i]!, data.colour[i]!));
  const blend = (i: number) => (described.has(i) ? recommendationVisual(mapped[i]!, data.text[i]!) : mapped[i]!);
  const measure = (query: (i: number) => Float32Array, corpus: readonly Float32Array[]) => recommendationPrecision(items, described, query, corpus);
  const f = (x: number) => x.toFixed(3);
  const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(62)}${cells.map((c) => c.padStart(9)).join("")}`);
  row("recommendations, visualWeight 1: same type in the top 10", "all", "descr.", "undescr.");
  row("  raw photo features", ...measure((i) => data.image[i]!, data.image).map(f));
  row("  mapped photos (before issue 12)", ...measure((i) => mapped[i]!, mapped).map(f));
  row("  + a described subject's descriptor in its query (default)", ...measure(blend, mapped).map(f));
  row("  + descriptors blended into the indexed photos too (rejected)", ...measure(blend, items.map((_, i) => blend(i))).map(f));
}

/** How a query becomes the vector compared with mapped photos. */
export type QueryEncoder = Pick<SentenceEncoder, "encode">;

/** A query's visual side as the service builds it: its word vector through the map's word prototypes. */
export function queriesThrough(map: TextImageMap, text: SentenceEncoder): QueryEncoder {
  return { encode: (query) => map.queryVisual(query, text.encode(query)) };
}

/** The map on the described half; with `prototypes` false, fitted without the titles' words (no word prototypes). */
function fitOnDescribed(data: Dataset, task: TextImageTask, options: FitTextImageMapOptions = {}, prototypes = true): { map: TextImageMap; fitMs: number } {
  const samples = task.described.map((i) => ({
    image: data.image[i]!,
    colour: data.colour[i]!,
    text: data.text[i]!,
    ...(prototypes ? { descriptor: data.items[i]!.productDisplayName } : {}),
  }));
  const t0 = performance.now();
  const map = fitTextImageMap(samples, options);
  return { map, fitMs: performance.now() - t0 };
}

function mapWithheld(data: Dataset, task: TextImageTask, map: TextImageMap): Float32Array[] {
  return task.withheld.map((i) => map.apply(data.image[i]!, data.colour[i]!));
}

export function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Fit time of the map on n samples drawn (cycling) from the data set. */
function fitTiming(data: Dataset, n: number, options: FitTextImageMapOptions = {}): number {
  const samples = Array.from({ length: n }, (_, i) => {
    const j = (i * 7919) % data.items.length;
    return { image: data.image[j]!, colour: data.colour[j]!, text: data.text[j]! };
  });
  const t0 = performance.now();
  fitTextImageMap(samples, options);
  return performance.now() - t0;
}

/** Mean time of one map.apply over the data set's photos. */
function projectionTime(data: Dataset, map: TextImageMap): number {
  const n = data.items.length;
  for (let i = 0; i < Math.min(n, 200); i++) map.apply(data.image[i]!, data.colour[i]!);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) map.apply(data.image[i]!, data.colour[i]!);
  return (performance.now() - t0) / n;
}

/**
 * 5-fold cross-validation within the described half: fit on four folds, and for each photo of the
 * fifth, the reciprocal rank of its own title among the fold's titles by cosine with the mapped
 * photo (and of the mapped photo among the fold's, for its title). Uses no withheld data: the
 * service could compute this on any catalog.
 */
function crossValidate(data: Dataset, task: TextImageTask, options: FitTextImageMapOptions, folds = 5): number[] {
  let i2t = 0, t2i = 0, count = 0;
  for (let fold = 0; fold < folds; fold++) {
    const train = task.described.filter((_, r) => r % folds !== fold);
    const test = task.described.filter((_, r) => r % folds === fold);
    const map = fitTextImageMap(train.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })), options);
    const outputs = test.map((i) => map.apply(data.image[i]!, data.colour[i]!));
    const texts = test.map((i) => data.text[i]!);
    const scores = outputs.map((o) => texts.map((t) => dot(o, t)));
    test.forEach((_, r) => {
      const own = scores[r]![r]!;
      i2t += 1 / (1 + scores[r]!.filter((s) => s > own).length);
      t2i += 1 / (1 + scores.filter((row) => row[r]! > own).length);
      count++;
    });
  }
  return [i2t / count, t2i / count];
}

const OPTIONS = {
  dir: { type: "string", default: DEFAULT_DIR },
  limit: { type: "string" },
  lambda: { type: "string", default: String(DEFAULT_LAMBDA) },
  "colour-weight": { type: "string", default: String(DEFAULT_COLOUR_WEIGHT) },
  landmarks: { type: "string", default: String(DEFAULT_KERNEL.landmarks) },
  cv: { type: "boolean", default: false },
  scales: { type: "string", default: "1,4" },
  "skip-service": { type: "boolean", default: false },
  "service-only": { type: "boolean", default: false },
  "headline-only": { type: "boolean", default: false },
  "mysql-url": { type: "string", default: "mysql://root@127.0.0.1:3306" },
  "redis-url": { type: "string" },
  "image-model": { type: "string", default: "mobilenet" },
} as const;
type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"];

async function main(): Promise<void> {
  const { values } = parseArgs({ options: OPTIONS });
  if (!IMAGE_MODELS.includes(values["image-model"] as ImageModel)) throw new Error(`--image-model: one of ${IMAGE_MODELS.join(", ")}`);
  const scales = values.scales.split(",").map(Number);
  if (scales.some((x) => !(x > 0))) throw new Error(`--scales: positive numbers, got ${values.scales}`);
  const results: [number, HeadlineMeasures | undefined][] = [];
  for (const [i, scale] of scales.entries()) {
    if (i > 0) console.log(`\n${"=".repeat(100)}\n`);
    results.push([scale, await evaluateSize(values, scale, i > 0 || values["headline-only"])]);
  }
  const f = (x: number) => x.toFixed(3);
  const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(62)}${cells.map((c) => c.padStart(9)).join("")}`);
  if (results.some(([, m]) => m)) {
    console.log("");
    console.log(`the issue's four measures through the service (half-described catalog, IMAGE_MODEL ${values["image-model"]}), by photo size`);
    row("photos", "F1", "type", "colour", "recs", "recs:des", "recs:und");
    for (const [scale, m] of results) {
      if (m) row(scale === 1 ? "thumbnails as given (225x300)" : `enlarged x${scale} (${225 * scale}x${300 * scale})`, f(m.typeF1), f(m.typeP10), f(m.colourP10), ...m.recommendations.map(f));
    }
    row("issue 12's goal", "0.700", "0.850", "0.700", "0.800");
  }
}

/**
 * Everything at one photo size; `headlineOnly` keeps the service part to the four
 * measures (the brand and title checks do not depend on the photos).
 */
async function evaluateSize(values: Values, scale: number, headlineOnly: boolean): Promise<HeadlineMeasures | undefined> {
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  const lambda = Number(values.lambda);
  const colourWeight = Number(values["colour-weight"]);
  const landmarks = Number(values.landmarks);
  const log = (m: string) => console.error(m);
  const imageModel = values["image-model"] as ImageModel;
  const data = await loadDataset(values.dir, limit, log, scale, imageModel);
  try {
    const { items } = data;
    const throughService = () =>
      evaluateThroughService({
        items,
        image: data.image,
        colour: data.colour,
        text: data.text,
        typeQueries: textImageTask(items).types.map((articleType) => ({ articleType, query: typeQuery(articleType) })),
        mysqlBase: values["mysql-url"],
        redisUrl: values["redis-url"],
        cacheDir: CACHE_DIR,
        log,
        headlineOnly,
      });
    if (values["service-only"]) return await throughService();
    const zeroTitles = data.text.filter((v) => !v.some((x) => x !== 0)).length;
    const f = (x: number) => x.toFixed(3);
    const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(62)}${cells.map((c) => c.padStart(9)).join("")}`);

    const size = scale === 1 ? "photos as given" : `photos enlarged x${scale} (Lanczos, JPEG quality 90) before encoding`;
    console.log(`Vitrine retrieval evaluation: ${values.dir}, ${items.length} items (${zeroTitles} titles with no known word), ${size}`);
    console.log(`image encoder ${imageEncoderVersion(imageModel)}; text encoder ${TEXT_ENCODER_VERSION}; colour profile: 11 basic colour names`);
    console.log("precision@10 by X = share of the 10 nearest whose X equals the query's");
    console.log("");

    const t1 = performance.now();
    row("leave-one-out precision@10 (all items)", "type", "colour");
    row("text-to-text (title -> the other titles)", ...selfPrecisionAtK(data.text, items, [byType, byColour]).map(f));
    row("image-to-image (photo -> the other photos)", ...selfPrecisionAtK(data.image, items, [byType, byColour]).map(f));
    for (const w of [0.5, 1]) {
      const withColour = data.image.map((v, i) => concatWeighted(v, data.colour[i]!, w));
      row(`image-to-image, colour profile concatenated x ${w}`, ...selfPrecisionAtK(withColour, items, [byType, byColour]).map(f));
    }
    const selfMs = performance.now() - t1;

    const task = textImageTask(items);
    const truth = task.classified.map((r) => task.withheldItems[r]!.articleType);
    const kernel = landmarks > 0 ? { ...DEFAULT_KERNEL, landmarks } : false;
    const options: FitTextImageMapOptions = { lambda, colourWeight, kernel };
    const { map, fitMs } = fitOnDescribed(data, task, options);
    const mapped = mapWithheld(data, task, map);
    const through = queriesThrough(map, data.textEncoder);
    const scores = scoreTextImage(task, through, mapped);
    const titles = scoreTextImage(task, data.textEncoder, task.withheld.map((i) => data.text[i]!));
    const kernelName = kernel
      ? `RBF kernel on ${kernel.landmarks} landmarks (lambda ${kernel.lambda}, bandwidth ${kernel.bandwidth}, colour weight ${kernel.colourWeight})`
      : "no kernel";
    console.log("");
    console.log(
      `text-to-image: map ${map.version} (lambda ${lambda}, colour weight ${colourWeight}, whitening ${DEFAULT_WHITENING}, ${kernelName}), ` +
        `fitted on the described half (even index: ${map.trainedOn} titles) in ${Math.round(fitMs)} ms, ` +
        `measured on the withheld half (odd index: ${task.withheld.length} products)`,
    );
    row(`zero-shot type, weighted F1 (${task.types.length} types with >= 10, ${task.classified.length} products)`, "mapped", "titles*");
    row(`  nearest type name, one-item form ("watch", "t-shirt", "heels")`, f(scores.f1["one-item"]), f(titles.f1["one-item"]));
    row(`  nearest type name as given, lower-cased ("watches", "tshirts")`, f(scores.f1["as-given"]), f(titles.f1["as-given"]));
    row("  chance (uniform guess among the types)", f(chanceWeightedF1(truth)));
    row("precision@10 against the withheld products", "type", "colour", "both");
    row(`  "<type>" (${task.types.length} queries) -> mapped photos`, f(scores.typeP10));
    row(`  "<colour> <type>" (${task.pairs.length} queries) -> mapped photos`, ...scores.colourTypeP10.map(f));
    row(`  "<type>" -> titles*`, f(titles.typeP10));
    row(`  "<colour> <type>" -> titles*`, ...titles.colourTypeP10.map(f));
    console.log("  * titles: the withheld products' own title vectors in place of mapped photos (text-to-text reference)");
    row("leave-one-out precision@10 among the withheld products", "type", "colour");
    row("  mapped photo -> the other mapped photos (recommendations)", ...selfPrecisionAtK(mapped, task.withheldItems, [byType, byColour]).map(f));
    const colourP10 = colourPrecision(task, through, mapped);
    row(`  "<colour>" (${colourP10.queries} colours with >= 10) -> mapped photos, by colour`, f(colourP10.p10));
    recommendationTable(data, task, map);

    console.log("");
    row("what each step of the map contributes", "F1", "F1 given", "type", "c+t:type", "colour", "both", "i2i:type", "i2i:col", "<colour>");
    const linear: FitTextImageMapOptions = { ...options, kernel: false };
    const withKernel: FitTextImageMapOptions = { ...options, kernel: kernel || DEFAULT_KERNEL };
    const variants: [string, FitTextImageMapOptions][] = [
      ["centred linear ridge only", { ...linear, whitening: false, removeMeanDirection: false }],
      ["+ residual whitening", { ...linear, removeMeanDirection: false }],
      ["+ mean text direction removed (linear map)", linear],
      ["  ... linear map at lambda 0.3 (the previous default map)", { ...linear, lambda: 0.3 }],
      [`+ RBF kernel ridge on residuals, ${(kernel || DEFAULT_KERNEL).landmarks} landmarks (the map before issue 12)`, withKernel],
      [`+ word prototypes beside a query's word vector${kernel ? " (default)" : ""}`, withKernel],
      ["  ... 250 landmarks", { ...withKernel, kernel: { ...DEFAULT_KERNEL, landmarks: 250 } }],
      ["  ... 500 landmarks", { ...withKernel, kernel: { ...DEFAULT_KERNEL, landmarks: 500 } }],
      ["  ... kernel bandwidth 1 (wider)", { ...withKernel, kernel: { ...DEFAULT_KERNEL, bandwidth: 1 } }],
      ["  ... kernel colour weight 1", { ...withKernel, kernel: { ...DEFAULT_KERNEL, colourWeight: 1 } }],
      ["  ... kernel lambda 0.3", { ...withKernel, kernel: { ...DEFAULT_KERNEL, lambda: 0.3 } }],
      ["  ... kernel lambda 1", { ...withKernel, kernel: { ...DEFAULT_KERNEL, lambda: 1 } }],
      ["  ... linear lambda 0.5", { ...withKernel, lambda: 0.5 }],
      ["  ... whitening 1 (milder)", { ...withKernel, whitening: 1 }],
      ["  ... without the colour profile (colour weight 0)", { ...withKernel, colourWeight: 0 }],
    ];
    const cvRows: [string, number[]][] = [];
    for (const [name, variant] of variants) {
      // Rows from the prototypes' on are variations of the default map, which has them.
      const prototypes = variants.findIndex(([n]) => n.startsWith("+ word prototypes")) <= variants.findIndex(([n]) => n === name);
      const fitted = fitOnDescribed(data, task, variant, prototypes).map;
      const v = mapWithheld(data, task, fitted);
      const q = queriesThrough(fitted, data.textEncoder);
      const s = scoreTextImage(task, q, v);
      row(name, f(s.f1["one-item"]), f(s.f1["as-given"]), f(s.typeP10), ...s.colourTypeP10.map(f), ...selfPrecisionAtK(v, task.withheldItems, [byType, byColour]).map(f), f(colourPrecision(task, q, v).p10));
      if (values.cv) cvRows.push([name, crossValidate(data, task, variant)]);
    }
    console.log("  F1: zero-shot type; type, c+t, <colour>: precision@10 of \"<type>\", \"<colour> <type>\" and \"<colour>\" queries; i2i: mapped photo to photo");
    if (values.cv) {
      console.log("");
      row("5-fold cross-validation on the described half (no withheld data)", "img>text", "text>img");
      for (const [name, [i2t, t2i]] of cvRows) row(name, f(i2t!), f(t2i!));
      console.log("  mean reciprocal rank of a held-out photo's own title among the fold's titles, and of its photo among the fold's photos");
    }

    console.log("");
    const t = data.timings;
    console.log(
      `encoding${data.cache.hit ? " (timed when the cache was made; read from the cache now)" : ""}: ` +
        `image model load ${Math.round(t.imageLoadMs)} ms, image ${t.imageMsPerPhoto.toFixed(1)} ms/photo, ` +
        `colour ${t.colourMsPerPhoto.toFixed(1)} ms/photo, text ${t.textMsPerTitle.toFixed(3)} ms/title, all ${(t.wallMs / 1000).toFixed(1)} s`,
    );
    console.log(`encodings cache: ${data.cache.file}`);
    console.log(`leave-one-out precision@10 computations: ${Math.round(selfMs)} ms`);
    const timings = (variant: FitTextImageMapOptions) =>
      [1000, 5000].map((n) => `n = ${n} (${n < map.inputDimensions ? "dual" : "primal"}) ${Math.round(fitTiming(data, n, variant))} ms`).join(", ");
    console.log(`map fit time, ${map.inputDimensions} -> ${map.outputDimensions}, one thread: ${timings(options)}` + (kernel ? `; linear map alone: ${timings(linear)}` : ""));
    const projectMs = projectionTime(data, map);
    console.log(`projecting a photo through the map: ${projectMs.toFixed(3)} ms (map ${(map.toBytes().length / 1e6).toFixed(1)} MB)`);

    return values["skip-service"] ? undefined : await throughService();
  } finally {
    await data.textEncoder.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
