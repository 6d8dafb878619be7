// Shared set-up and reference maths for the search tests: catalogs of synthetic products completed
// through the real processing queue (see synthetic-processing.ts), and the documented score computed
// here, independently of the service, from the embeddings the test chose and the catalog's stored map.
import { randomBytes, randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { expect } from "vitest";
import { openSentenceEncoder, textImageMapFromBytes } from "../../src/embeddings/index.js";
import type { OpenedSentenceEncoder, TextImageMap } from "../../src/embeddings/index.js";
import type { ClaimedProduct } from "../../src/processing/index.js";
import { MysqlProcessingQueue, readMapBytes } from "../../src/storage/mysql/index.js";
import { products as productsTable } from "../../src/storage/mysql/schema.js";
import { cacheDir } from "./cache-dir.js";
import { restClient } from "./rest-client.js";
import type { RestClient } from "./rest-client.js";
import { colourHistogram, completeWith, randomUnit, seededRandom } from "./synthetic-processing.js";
import type { SyntheticEmbeddings } from "./synthetic-processing.js";
import { startTestServer } from "./test-server.js";
import type { TestServer } from "./test-server.js";
import { lexicalReference } from "./lexical-reference.js";
import { cosine } from "./vectors.js";

export const BOOST = 0.05;
export const SUPER_BOOST = 0.1;
export const COLOUR_NAMES = ["black", "white", "grey", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown"];
export const WORDS = ["red dress", "blue denim jacket", "black leather handbag", "white sneakers", "green summer top", "brown boots"];

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonRecord = { [key: string]: Json };
export type Rank = "NO_BOOST" | "BOOST" | "SUPER_BOOST";

export interface ProductSpec {
  id: string;
  descriptor: string;
  metadata: JsonRecord;
  embeddings: SyntheticEmbeddings;
}

/** What the test believes a searchable (PROCESSED) product looks like in the index. */
export interface Indexed {
  id: string;
  /** What its lexical words are (lexical-reference.ts). */
  descriptor: string;
  embeddings: SyntheticEmbeddings;
  rank: Rank;
  metadata: JsonRecord;
}

export interface Hit {
  productId: string;
  score: number;
  metadata?: JsonRecord;
}

export interface Served {
  server: TestServer;
  api: RestClient;
  org: string;
}

/** A test server with the search settings the expectations below assume, and an organization key. */
export async function serve(env: Record<string, string> = {}): Promise<Served> {
  const server = await startTestServer({ CACHE_DIR: cacheDir, SEARCH_BOOST: String(BOOST), SEARCH_SUPER_BOOST: String(SUPER_BOOST), ...env });
  const org = randomUUID();
  const api = restClient(server.restUrl, await server.createKey(org));
  return { server, api, org };
}

export async function openText(): Promise<OpenedSentenceEncoder> {
  return openSentenceEncoder({ cacheDir });
}

/** `count` products with seeded random photos, a described text and metadata of the caller's choosing. */
export function syntheticProducts(
  text: OpenedSentenceEncoder,
  count: number,
  options: { seed: number; idOf?: (i: number) => string; metadataOf?: (i: number) => JsonRecord },
): ProductSpec[] {
  const random = seededRandom(options.seed);
  return Array.from({ length: count }, (_, i) => {
    const id = options.idOf?.(i) ?? `sku-${i}`;
    const descriptor = `${WORDS[i % WORDS.length]} ${i}`;
    return {
      id,
      descriptor,
      metadata: options.metadataOf?.(i) ?? { colour: COLOUR_NAMES[i % 11]!, n: i },
      embeddings: { image: randomUnit(random, 1280), colour: colourHistogram(random, i % 11), text: text.encode(descriptor) },
    };
  });
}

/** What the index holds of these products, with the ranks given (NO_BOOST otherwise). */
export function asIndexed(specs: readonly ProductSpec[], ranks: Record<string, Rank> = {}): Indexed[] {
  return specs.map((p) => ({ id: p.id, descriptor: p.descriptor, embeddings: p.embeddings, metadata: p.metadata, rank: ranks[p.id] ?? "NO_BOOST" }));
}

export async function createCatalog(s: Served, name = `shop-${randomBytes(3).toString("hex")}`): Promise<string> {
  const res = await s.api.post(`/organizations/${s.org}/catalogs`, { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

export function productsPath(s: Served, catalogId: string): string {
  return `/organizations/${s.org}/catalogs/${catalogId}/products`;
}

/** Create Products through REST (202), leaving them PROCESSING. */
export async function postProducts(s: Served, catalogId: string, specs: readonly ProductSpec[]): Promise<void> {
  for (let start = 0; start < specs.length; start += 1000) {
    const batch = specs.slice(start, start + 1000).map((p) => ({
      id: p.id,
      imageUrl: `https://images.example/${p.id}.jpg`,
      descriptor: p.descriptor,
      metadata: p.metadata,
    }));
    const res = await s.api.post(productsPath(s, catalogId), batch);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
  }
}

/** Completes the given PROCESSING products through the real queue (and the sync that follows). */
export async function processProducts(s: Served, specs: readonly ProductSpec[]): Promise<void> {
  await completeWith(s.server, new Map(specs.map((p) => [p.id, p.embeddings])));
}

/**
 * Claims every due PROCESSING product and fails those listed (status ERROR), as a worker that gave
 * up on them would; the others are handed back untouched (claim bumped their attempts only).
 */
export async function failProducts(s: Served, catalogId: string, productIds: readonly string[]): Promise<void> {
  const queue = new MysqlProcessingQueue(s.server.app.mysql.db);
  const owner = `test-fail-${randomBytes(4).toString("hex")}`;
  const jobs: ClaimedProduct[] = await queue.claim(owner, 10_000, 60_000, 100);
  const wanted = new Set(productIds);
  const failed = jobs.filter((j) => j.catalogId === catalogId && wanted.has(j.productId));
  expect(failed.map((j) => j.productId).sort()).toEqual([...wanted].sort());
  for (const job of jobs) {
    if (failed.includes(job)) await queue.fail(job, owner, "synthetic failure");
    else await queue.retryLater(job, owner, "not this test's", new Date(0));
  }
}

/** The catalog's text-image map as stored now (the visual space the index uses). */
export async function storedMap(s: Served, catalogId: string): Promise<TextImageMap> {
  const bytes = await readMapBytes(s.server.app.mysql.db, catalogId);
  expect(bytes, "the catalog has a text-image map (at least 20 described products)").toBeDefined();
  return textImageMapFromBytes(bytes!);
}

export async function productStatus(s: Served, catalogId: string, productId: string): Promise<string | undefined> {
  const rows = await s.server.app.mysql.db
    .select({ status: productsTable.status })
    .from(productsTable)
    .where(and(eq(productsTable.catalogId, catalogId), eq(productsTable.id, productId)));
  return rows[0]?.status;
}

export interface QueryParts {
  visual: Float32Array;
  text: Float32Array;
  /** A search's words, matched lexically with the descriptors; none for recommendations. */
  typed?: string;
}

/** A text query is compared with both the mapped photos and the descriptors, in meaning and in letters. */
export function textQuery(text: OpenedSentenceEncoder, query: string): QueryParts {
  const q = text.encode(query.trim().toLowerCase());
  return { visual: q, text: q, typed: query };
}

/**
 * Recommendations compare the subject's mapped photo and its descriptor with everyone's; a
 * described subject's visual side is the unit mean of its mapped photo and its descriptor's vector.
 */
export function productQuery(map: TextImageMap, e: SyntheticEmbeddings): QueryParts {
  const photo = mapped(map, e);
  if (!e.text.some((x) => x !== 0)) return { visual: photo, text: e.text };
  const sum = photo.map((v, i) => v + e.text[i]!);
  const norm = Math.hypot(...sum);
  return { visual: sum.map((v) => v / norm), text: e.text };
}

const mappedCache = new WeakMap<TextImageMap, WeakMap<SyntheticEmbeddings, Float32Array>>();

/** The photo's position in the text space under this map (memoised: a map is a large matrix). */
export function mapped(map: TextImageMap, e: SyntheticEmbeddings): Float32Array {
  let perMap = mappedCache.get(map);
  if (!perMap) mappedCache.set(map, (perMap = new WeakMap()));
  let v = perMap.get(e);
  if (!v) perMap.set(e, (v = map.apply(e.image, e.colour)));
  return v;
}

/**
 * Every indexed product with its documented score, best first (equal scores by id):
 * w * cos(query visual, mapped photo) + (1 - w) * max(0.8 * cos(query text, descriptor), lexical) + boost.
 * A query of unknown words (zero vector) ranks only the products it matches lexically, by letters.
 * The metadata is what results show and filters test: the product's metadata with `rank` set.
 */
export function ranking(map: TextImageMap, indexed: Iterable<Indexed>, query: QueryParts, w: number): Required<Hit>[] {
  const products = [...indexed];
  const lexical = query.typed === undefined ? new Map<string, number>() : lexicalReference(query.typed, new Map(products.map((p) => [p.id, p.descriptor])));
  const meaningless = !query.text.some((x) => x !== 0);
  const similar = (a: Float32Array, b: Float32Array) => (meaningless ? 0 : cosine(a, b));
  // A search's visual side: its word vector beside the map's prototypes of its words.
  const queryVisual = query.typed === undefined ? query.visual : map.queryVisual(query.typed, query.visual);
  return products
    .filter((p) => !meaningless || (lexical.get(p.id) ?? -1) > -1)
    .map((p) => {
      const visual = mapped(map, p.embeddings);
      const boost = p.rank === "BOOST" ? BOOST : p.rank === "SUPER_BOOST" ? SUPER_BOOST : 0;
      const textSimilarity = Math.max(0.8 * similar(query.text, p.embeddings.text), lexical.get(p.id) ?? -1);
      const score = w * similar(queryVisual, visual) + (1 - w) * textSimilarity + boost;
      return { productId: p.id, score, metadata: { ...p.metadata, rank: p.rank } };
    })
    .sort((a, b) => b.score - a.score || (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0));
}

/** Asserts the service's hits are exactly the expected ones: same ids in order, same scores. */
export function expectHits(actual: readonly Hit[], expected: readonly Hit[], what = ""): void {
  expect(actual.map((h) => h.productId), what).toEqual(expected.map((h) => h.productId));
  actual.forEach((h, i) => expect(h.score, `${what} score of ${h.productId}`).toBeCloseTo(expected[i]!.score, 5));
}

export const ids = (hits: readonly { productId: string }[]): string[] => hits.map((h) => h.productId);
