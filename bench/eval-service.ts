// The retrieval evaluation through the running service (REST, real Redis 8 and MariaDB), with
// lexical matching off and on: brand names, exact titles, misspelt brands and brand prefixes on a
// catalog whose products all have their titles; and the photo-only numbers (products without a
// descriptor, found by their photos) on a catalog where only the even-index half is described.
// Products are completed through the real processing queue with the encodings eval.ts computed
// (the image model is not run again); everything after that is the service's own path.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { loadConfig } from "../src/config/index.js";
import { provisionRedis8 } from "../src/provisioning/index.js";
import type { ProvisionedRedis } from "../src/provisioning/index.js";
import { lexicalWords } from "../src/search/index.js";
import { createApiApp } from "../src/apps/api/api-app.js";
import type { ApiApp } from "../src/apps/api/api-app.js";
import { completeWith } from "../test/support/synthetic-processing.js";
import type { TestServer } from "../test/support/test-server.js";
import { freePort } from "../test/support/free-port.js";
import { API_KEY_HEADER } from "../src/rpc/headers.js";

/** Undescribed products of the half catalog (odd index), all of them, for the zero-shot classification. */
const UNDESCRIBED = [{ field: "described", operator: "eq", value: false }];
const MIN_COLOUR_PRODUCTS = 10;

async function headline(
  input: ServiceEvalInput,
  search: (query: string, visualWeight: number, extra?: object) => Promise<Hit[]>,
  recommend: (productId: string) => Promise<Hit[]>,
): Promise<HeadlineMeasures> {
  const undescribed = input.items.filter((_, i) => i % 2 === 1);
  // Zero-shot: every undescribed product's score under each type query (topK covers them all), the
  // best-scoring type its prediction; products of types outside the query list are not classified.
  const best = new Map<string, { type: string; score: number }>();
  let typeP10 = 0;
  for (const { articleType, query } of input.typeQueries) {
    const hits = await search(query, 1, { filters: UNDESCRIBED, topK: Math.min(500, undescribed.length) });
    typeP10 += hits.slice(0, 10).filter((h) => h.metadata.articleType === articleType).length / 10;
    for (const h of hits) {
      const seen = best.get(h.productId);
      if (!seen || h.score > seen.score) best.set(h.productId, { type: articleType, score: h.score });
    }
  }
  const listed = new Set(input.typeQueries.map((q) => q.articleType));
  const classified = undescribed.filter((item) => listed.has(item.articleType));
  const truth = classified.map((item) => item.articleType);
  // A product in no query's top 500 counts as wrong.
  const predicted = classified.map((item) => best.get(`half-${item.id}`)?.type ?? "");
  const colourCounts = new Map<string, number>();
  for (const item of undescribed) colourCounts.set(item.baseColour, (colourCounts.get(item.baseColour) ?? 0) + 1);
  const colours = [...colourCounts].filter(([, n]) => n >= MIN_COLOUR_PRODUCTS).map(([c]) => c).sort();
  let colourP10 = 0;
  for (const colour of colours) {
    const hits = await search(colour.toLowerCase(), 1, { filters: UNDESCRIBED });
    colourP10 += hits.filter((h) => h.metadata.baseColour === colour).length / 10;
  }
  const sums = [0, 0, 0];
  const counts = [0, 0, 0];
  for (let i = 0; i < input.items.length; i++) {
    const item = input.items[i]!;
    const hits = await recommend(item.id);
    const share = hits.filter((h) => h.metadata.articleType === item.articleType).length / 10;
    for (const k of [0, i % 2 === 0 ? 1 : 2]) {
      sums[k]! += share;
      counts[k]!++;
    }
  }
  const measures: HeadlineMeasures = {
    typeF1: weightedF1(truth, predicted),
    typeP10: typeP10 / input.typeQueries.length,
    colourP10: colourP10 / colours.length,
    recommendations: sums.map((s, k) => s / counts[k]!) as [number, number, number],
  };
  const f = (x: number) => x.toFixed(3);
  const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(62)}${cells.map((c) => c.padStart(9)).join("")}`);
  console.log("");
  console.log(`the issue's measures, through the service (half-described catalog, visual weight 1)`);
  row(`zero-shot type, weighted F1 (${classified.length} undescribed, ${listed.size} types)`, f(measures.typeF1));
  row(`"<type>" P@10 among undescribed products`, f(measures.typeP10));
  row(`"<colour>" P@10 among undescribed products (${colours.length} colours)`, f(measures.colourP10));
  row(`recommendations: same type in the top 10 (all, described, undescribed)`, ...measures.recommendations.map(f));
  return measures;
}

/** Support-weighted F1 over the classes in `truth` (predictions may name any class). */
export function weightedF1(truth: readonly string[], predicted: readonly string[]): number {
  let total = 0;
  for (const c of new Set(truth)) {
    let tp = 0, fp = 0, fn = 0;
    truth.forEach((t, i) => {
      const p = predicted[i];
      if (t === c && p === c) tp++;
      else if (p === c) fp++;
      else if (t === c) fn++;
    });
    total += tp === 0 ? 0 : ((2 * tp) / (2 * tp + fp + fn)) * (tp + fn);
  }
  return total / truth.length;
}

export interface EvalItem {
  id: string;
  articleType: string;
  baseColour: string;
  productDisplayName: string;
}

export interface ServiceEvalInput {
  items: readonly EvalItem[];
  image: readonly Float32Array[];
  colour: readonly Float32Array[];
  text: readonly Float32Array[];
  /** "<type>" query per article type measured on the withheld half. */
  typeQueries: readonly { articleType: string; query: string }[];
  mysqlBase: string;
  redisUrl: string | undefined;
  cacheDir: string;
  log: (message: string) => void;
  /** Only the half-described catalog and the four measures (the brand and title checks need every title). */
  headlineOnly?: boolean;
}

interface Hit {
  productId: string;
  score: number;
  metadata: Record<string, unknown>;
}

const MIN_BRAND_PRODUCTS = 5;

/** A brand misspelt by one substitution in its middle ("skechers" -> "skezhers"). */
export function misspelt(brand: string): string {
  const letters = [...brand];
  const middle = Math.floor(letters.length / 2);
  letters[middle] = letters[middle] === "z" ? "x" : "z";
  return letters.join("");
}

/** The four measures on the half-described catalog, as a shopper's calls see them. */
export interface HeadlineMeasures {
  /** Zero-shot type of each undescribed product: the type query that scores it highest (visual_weight 1), support-weighted F1. */
  typeF1: number;
  /** "<type>" (visual_weight 1), filtered to undescribed products: P@10 by type. */
  typeP10: number;
  /** "<colour>" (visual_weight 1), filtered to undescribed products: P@10 by colour. */
  colourP10: number;
  /** Recommendations (visualWeight 1) of every product: share of the top 10 of its type; [all, described, undescribed]. */
  recommendations: [number, number, number];
}

export async function evaluateThroughService(input: ServiceEvalInput): Promise<HeadlineMeasures> {
  const row = (name: string, ...cells: string[]) => console.log(`${name.padEnd(62)}${cells.map((c) => c.padStart(9)).join("")}`);
  const f = (x: number) => x.toFixed(3);
  let redis: ProvisionedRedis | undefined;
  const redisDir = mkdtempSync(join(tmpdir(), "vitrine-eval-redis-"));
  const dataDir = mkdtempSync(join(tmpdir(), "vitrine-eval-"));
  const database = `vitrine_eval_${randomBytes(4).toString("hex")}`;
  const dbUrl = new URL(input.mysqlBase);
  dbUrl.pathname = `/${database}`;
  const apps: ApiApp[] = [];
  try {
    let redisUrl = input.redisUrl;
    if (!redisUrl) {
      redis = await provisionRedis8({ cacheDir: input.cacheDir, port: await freePort(), dataDir: redisDir, log: input.log });
      redisUrl = redis.url;
    }
    const adminKey = `eval-admin-${randomUUID()}`;
    const env = {
      PORT: "0",
      GRPC_PORT: "0",
      HOST: "127.0.0.1",
      MYSQL_URL: dbUrl.toString(),
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `vitrine-eval-${randomBytes(4).toString("hex")}:`,
      ADMIN_API_KEY: adminKey,
      DATA_DIR: dataDir,
      CACHE_DIR: input.cacheDir,
      LOG_LEVEL: "warn",
      SHUTDOWN_GRACE_MS: "500",
      WORKERS: "0",
      RATE_LIMIT_PER_SECOND: "0",
    };
    // Two API processes on one database and index: meaning only (as before), and with lexical matching.
    const services: Record<"off" | "on", string> = { off: "", on: "" };
    const configs = { on: loadConfig({ ...env, SEARCH_LEXICAL: "on" }), off: loadConfig({ ...env, SEARCH_LEXICAL: "off" }) };
    for (const mode of ["on", "off"] as const) {
      const app = await createApiApp(configs[mode]);
      apps.push(app);
      services[mode] = (await app.listen()).restUrl;
    }
    const organizationId = randomUUID();
    const keyRes = await fetch(`${services.on}/organizations/${organizationId}/keys`, {
      method: "POST",
      headers: { "content-type": "application/json", [API_KEY_HEADER]: adminKey },
      body: JSON.stringify({ name: "eval", scopes: ["read", "write", "search"] }),
    });
    if (keyRes.status !== 201) throw new Error(`key creation failed: ${keyRes.status} ${await keyRes.text()}`);
    const apiKey = ((await keyRes.json()) as { key: string }).key;
    const call = async (base: string, path: string, body: unknown) => {
      const res = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json", [API_KEY_HEADER]: apiKey }, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };

    // Two catalogs: every title known ("titled"), and only the even-index half ("half").
    const titles = input.items.map((item) => item.productDisplayName.toLowerCase());
    const brands = titles.map((t) => lexicalWords(t)[0] ?? "");
    const embeddings = new Map<string, { image: Float32Array; colour: Float32Array; text: Float32Array }>();
    const catalogs: Record<"titled" | "half", string> = { titled: "", half: "" };
    for (const kind of input.headlineOnly ? (["half"] as const) : (["titled", "half"] as const)) {
      catalogs[kind] = (await call(services.on, `/organizations/${organizationId}/catalogs`, { name: kind })).id as string;
      const products = input.items.map((item, i) => {
        const described = kind === "titled" || i % 2 === 0;
        const id = `${kind}-${item.id}`;
        const text = described ? input.text[i]! : new Float32Array(input.text[i]!.length);
        embeddings.set(id, { image: input.image[i]!, colour: input.colour[i]!, text });
        return {
          id,
          imageUrl: `https://images.example/${item.id}.jpg`,
          descriptor: described ? item.productDisplayName : "",
          metadata: { brand: brands[i]!, articleType: item.articleType, baseColour: item.baseColour, described },
        };
      });
      for (let start = 0; start < products.length; start += 1000) {
        await call(services.on, `/organizations/${organizationId}/catalogs/${catalogs[kind]}/products`, products.slice(start, start + 1000));
      }
    }
    const started = performance.now();
    await completeWith({ app: apps[0]!, config: configs.on } as TestServer, embeddings);
    input.log(`service evaluation: ${embeddings.size} products processed and indexed in ${Math.round(performance.now() - started)} ms`);

    const search = async (mode: "off" | "on", catalog: "titled" | "half", query: string, w: number, extra: object = {}) =>
      (await call(services[mode], "/search", { organizationId, catalogId: catalogs[catalog], query, topK: 10, visual_weight: w, similarity_threshold: 0, ...extra }))
        .results as Hit[];

    const recommend = (productId: string) =>
      call(services.on, "/recs", { organizationId, catalogId: catalogs.half, productId: `half-${productId}`, topK: 10, visualWeight: 1 }).then((r) => r.results as Hit[]);
    if (input.headlineOnly) return await headline(input, (query, w, extra) => search("on", "half", query, w, extra), recommend);
    const brandCounts = new Map<string, number>();
    for (const b of brands) if (b) brandCounts.set(b, (brandCounts.get(b) ?? 0) + 1);
    const testedBrands = [...brandCounts].filter(([, n]) => n >= MIN_BRAND_PRODUCTS).map(([b]) => b).sort();
    const brandP10 = async (mode: "off" | "on", queryOf: (brand: string) => string | undefined) => {
      let sum = 0;
      let queries = 0;
      let empty = 0;
      for (const brand of testedBrands) {
        const query = queryOf(brand);
        if (query === undefined) continue;
        const hits = await search(mode, "titled", query, 0.5);
        if (hits.length === 0) empty++;
        sum += hits.filter((h) => h.metadata.brand === brand).length / Math.min(10, brandCounts.get(brand)!);
        queries++;
      }
      return { p10: sum / queries, queries, empty };
    };
    const titleOf = new Map(input.items.map((item, i) => [`titled-${item.id}`, titles[i]!]));
    const titleFirst = async (mode: "off" | "on", w: number) => {
      let first = 0;
      for (let i = 0; i < input.items.length; i++) {
        const hits = await search(mode, "titled", titles[i]!, w);
        // Several products share a title: any of them first counts.
        if (hits[0] && titleOf.get(hits[0].productId) === titles[i]) first++;
      }
      return first / input.items.length;
    };
    const photoOnly = async (mode: "off" | "on") => {
      let filtered = 0;
      let mixed = 0;
      for (const { articleType, query } of input.typeQueries) {
        const undescribed = await search(mode, "half", query, 0.5, { filters: [{ field: "described", operator: "eq", value: false }] });
        filtered += undescribed.filter((h) => h.metadata.articleType === articleType).length / 10;
        const all = await search(mode, "half", query, 0.5);
        mixed += all.filter((h) => h.metadata.articleType === articleType && h.metadata.described === false).length / 10;
      }
      return { filtered: filtered / input.typeQueries.length, mixed: mixed / input.typeQueries.length };
    };

    console.log("");
    console.log(
      `through the service (REST, Redis 8, MariaDB), lexical matching off (meaning only) and on; ${input.items.length} products; ` +
        `${testedBrands.length} brands (first word of the title) with >= ${MIN_BRAND_PRODUCTS} products; visual_weight 0.5 unless stated`,
    );
    row("", "off", "on");
    const both = async (name: string, measure: (mode: "off" | "on") => Promise<string>) => row(name, await measure("off"), await measure("on"));
    const brandRuns = {
      exact: { off: await brandP10("off", (b) => b), on: await brandP10("on", (b) => b) },
      misspelt: { off: await brandP10("off", (b) => ([...b].length >= 4 ? misspelt(b) : undefined)), on: await brandP10("on", (b) => ([...b].length >= 4 ? misspelt(b) : undefined)) },
      prefix: { off: await brandP10("off", (b) => ([...b].length > 4 ? [...b].slice(0, 4).join("") : undefined)), on: await brandP10("on", (b) => ([...b].length > 4 ? [...b].slice(0, 4).join("") : undefined)) },
    };
    row(`brand P@10, "<brand>" (${brandRuns.exact.on.queries} queries)`, f(brandRuns.exact.off.p10), f(brandRuns.exact.on.p10));
    row(`  brand queries answering an empty list`, String(brandRuns.exact.off.empty), String(brandRuns.exact.on.empty));
    row(`brand P@10, one letter substituted (${brandRuns.misspelt.on.queries} brands of 4+ letters)`, f(brandRuns.misspelt.off.p10), f(brandRuns.misspelt.on.p10));
    row(`brand P@10, first 4 letters (${brandRuns.prefix.on.queries} brands of 5+ letters)`, f(brandRuns.prefix.off.p10), f(brandRuns.prefix.on.p10));
    for (const w of [0.5, 0.2]) await both(`exact title first (${input.items.length} titles), visual_weight ${w}`, async (mode) => f(await titleFirst(mode, w)));
    const photo = { off: await photoOnly("off"), on: await photoOnly("on") };
    row(`photo-only: "<type>" P@10 among undescribed products (filter)`, f(photo.off.filtered), f(photo.on.filtered));
    row(`photo-only: undescribed products of the type in the mixed top 10`, f(photo.off.mixed), f(photo.on.mixed));
    console.log(`  ${input.typeQueries.length} "<type>" queries on the half-described catalog; brand misspellings as in "${misspelt("skechers")}"`);
    return await headline(input, (query, w, extra) => search("on", "half", query, w, extra), recommend);
  } finally {
    for (const app of apps) await app.close().catch(() => undefined);
    const server = new URL(dbUrl);
    server.pathname = "/";
    const connection = await mysql.createConnection({ uri: server.toString() });
    await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await connection.end();
    await redis?.stop();
    rmSync(redisDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
}

