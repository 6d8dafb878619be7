// Text-image maps at real size against a MariaDB of this test's own, so that its server settings
// can be changed without touching the machine's: a map of 1,000 landmarks (about 6 MB) is saved
// and read back under MySQL 5.7's default max_allowed_packet of 4 MB; a catalog larger than the
// fit's sample cap is fitted on a repeatable sample; and a save the server refuses is recorded,
// backed off, logged in one short line without values, and leaves the last good map in place.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fitTextImageMap, textImageMapFromBytes } from "../../src/embeddings/index.js";
import { createLogger, MAX_LOG_LINE_BYTES } from "../../src/logging/index.js";
import { TextImageMapRefresher } from "../../src/processing/index.js";
import type { MapFitReport } from "../../src/processing/index.js";
import { provisionMariadb } from "../../src/provisioning/index.js";
import type { ProvisionedMariadb } from "../../src/provisioning/index.js";
import { MAP_CHUNK_BYTES, MysqlTextImageMapStore, openMysql, readMapBytes } from "../../src/storage/mysql/index.js";
import type { MysqlConnection } from "../../src/storage/mysql/index.js";
import { catalogTextMapChunks, catalogTextMapFailures, catalogTextMaps, productEmbeddings, products } from "../../src/storage/mysql/schema.js";
import { vectorToBytes } from "../../src/storage/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { seededRandom, randomUnit } from "../support/random.js";
import { freePort } from "../support/free-port.js";

const MODEL = "map-store-test-v1";
const CATALOG = "00000000-0000-4000-8000-000000000001";
const DESCRIBED = 1400;
const UNDESCRIBED = 100;
const MAX_SAMPLES = 1200;
const FOUR_MB = 4 * 1024 * 1024;

let server: ProvisionedMariadb;
let url: string;
let db: MysqlConnection;
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-map-store-"));

/** Sets the server's max_allowed_packet; connections opened afterwards get it, so the pool is reopened. */
async function setPacketLimit(bytes: number): Promise<void> {
  const admin = await mysql.createConnection({ uri: server.url });
  await admin.query("SET GLOBAL max_allowed_packet = ?", [bytes]);
  await admin.end();
  await db?.close();
  db = await openMysql(url);
}

/** Products with embeddings shaped like the real ones: sparse non-negative image features, a colour histogram, a text vector (zero: undescribed). */
async function insertProducts(from: number, count: number, described: (i: number) => boolean): Promise<void> {
  const random = seededRandom(from + 7);
  const now = new Date();
  for (let start = from; start < from + count; start += 100) {
    const ids = Array.from({ length: Math.min(100, from + count - start) }, (_, k) => start + k);
    await db.db.insert(products).values(
      ids.map((i) => ({
        catalogId: CATALOG,
        id: `p${String(i).padStart(6, "0")}`,
        imageUrl: `https://images.example/${i}.jpg`,
        descriptor: described(i) ? `product ${i}` : "",
        metadata: {},
        status: "PROCESSED" as const,
        createdAt: now,
        updatedAt: now,
      })),
    );
    await db.db.insert(productEmbeddings).values(
      ids.map((i) => {
        const image = new Float32Array(1280);
        for (let j = 0; j < 1280; j++) image[j] = random() < 0.6 ? 0 : Math.sqrt(random()) * 0.05;
        const colour = new Float32Array(11);
        colour[i % 11] = 1;
        const text = described(i) ? randomUnit(random, 100) : new Float32Array(100);
        return {
          catalogId: CATALOG,
          productId: `p${String(i).padStart(6, "0")}`,
          modelVersion: MODEL,
          imageSha256: "0".repeat(64),
          image: vectorToBytes(image),
          colour: vectorToBytes(colour),
          text: vectorToBytes(text),
          described: described(i),
          updatedAt: now,
        };
      }),
    );
  }
}

beforeAll(async () => {
  server = await provisionMariadb({ cacheDir, port: await freePort(), dataDir, log: () => undefined });
  url = `${server.url}maps_${randomBytes(4).toString("hex")}`;
  await setPacketLimit(FOUR_MB);
  await insertProducts(0, DESCRIBED + UNDESCRIBED, (i) => i % 15 !== 14);
}, 180_000);

afterAll(async () => {
  await db?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function refresher(log = createLogger({ level: "silent" })) {
  const fits: MapFitReport[] = [];
  const store = new MysqlTextImageMapStore(db.db, db.pool);
  const maps = new TextImageMapRefresher(store, MODEL, { maxSamples: MAX_SAMPLES, onFit: (f) => fits.push(f) }, log);
  return { store, maps, fits };
}

async function mapRow() {
  const [row] = await db.db.select().from(catalogTextMaps).where(eq(catalogTextMaps.catalogId, CATALOG));
  return row;
}

describe("text-image maps in MySQL", () => {
  it("saves a 6 MB map in chunks under a 4 MB max_allowed_packet and reads it back exactly", { timeout: 300_000 }, async () => {
    const { store } = refresher();
    const samples = await store.samples(CATALOG, MODEL, MAX_SAMPLES);
    const map = fitTextImageMap(samples);
    const bytes = map.toBytes();
    expect(bytes.length, "a map with 1,000 landmarks is larger than the packet limit").toBeGreaterThan(FOUR_MB);
    await store.save(CATALOG, `${MODEL}+manual`, map, DESCRIBED);

    const chunks = await db.db.select({ seq: catalogTextMapChunks.seq }).from(catalogTextMapChunks).where(eq(catalogTextMapChunks.catalogId, CATALOG));
    expect(chunks).toHaveLength(Math.ceil(bytes.length / MAP_CHUNK_BYTES));
    const read = await readMapBytes(db.db, CATALOG);
    expect(read!.equals(bytes)).toBe(true);
    const back = textImageMapFromBytes(read!);
    expect(back.version).toBe(map.version);
    const probe = samples[3]!;
    expect([...back.apply(probe.image, probe.colour)]).toEqual([...map.apply(probe.image, probe.colour)]);

    // A second save replaces the first: one generation of chunks remains.
    await store.save(CATALOG, `${MODEL}+manual`, map, DESCRIBED);
    const generations = new Set(
      (await db.db.select({ g: catalogTextMapChunks.generation }).from(catalogTextMapChunks).where(eq(catalogTextMapChunks.catalogId, CATALOG))).map((r) => r.g),
    );
    expect([...generations]).toEqual([(await mapRow())!.generation]);
  });

  it("fits a catalog larger than the sample cap on a repeatable sample spread over all of it", { timeout: 300_000 }, async () => {
    const { store, maps, fits } = refresher();
    expect(await store.countDescribed(CATALOG, MODEL)).toBe(DESCRIBED);
    const a = await store.samples(CATALOG, MODEL, MAX_SAMPLES);
    const b = await store.samples(CATALOG, MODEL, MAX_SAMPLES);
    expect(a).toHaveLength(MAX_SAMPLES);
    expect(a.map((s) => s.text[0])).toEqual(b.map((s) => s.text[0]));
    // Undescribed products teach the map nothing: never sampled.
    expect(a.every((s) => s.text.some((v) => v !== 0))).toBe(true);

    await maps.refresh([CATALOG]); // the recipe differs from the manual save above: due
    expect(fits.map((f) => f.outcome)).toEqual(["fitted"]);
    const row = await mapRow();
    expect(row).toMatchObject({ trainedOn: MAX_SAMPLES, describedAtFit: DESCRIBED });
    expect(row!.bytes).toBeGreaterThan(FOUR_MB);

    // A sampled map is refitted when the catalog has doubled, not every 25%.
    await maps.refresh([CATALOG]);
    await insertProducts(10_000, 600, () => true);
    await maps.refresh([CATALOG]);
    expect(fits).toHaveLength(1);

    // Doubled while an import is still under way: a sampled map waits for its end (each refit
    // rebuilds the whole index), then is refitted.
    await insertProducts(20_000, 2 * DESCRIBED - 600 - DESCRIBED, () => true);
    const now = new Date();
    await db.db.insert(products).values({ catalogId: CATALOG, id: "waiting", imageUrl: "https://images.example/w.jpg", descriptor: "waiting", metadata: {}, status: "PROCESSING", createdAt: now, updatedAt: now });
    expect(await store.importing(CATALOG)).toBe(true);
    await maps.refresh([CATALOG]);
    expect(fits).toHaveLength(1);
    await db.db.update(products).set({ status: "ERROR" }).where(eq(products.id, "waiting"));
    expect(await store.importing(CATALOG)).toBe(false);
    await maps.refresh([CATALOG]);
    expect(fits.map((f) => f.outcome)).toEqual(["fitted", "fitted"]);
    expect(await mapRow()).toMatchObject({ describedAtFit: 2 * DESCRIBED });
  });

  it("fits a due map once when two workers find it due together", { timeout: 300_000 }, async () => {
    await db.db.update(catalogTextMaps).set({ modelVersion: "an-older-recipe" }).where(eq(catalogTextMaps.catalogId, CATALOG));
    const first = refresher();
    // The second worker found the map due too, but reaches the lock only once the first has fitted it.
    let firstDone: () => void = () => undefined;
    const firstFitted = new Promise<void>((resolve) => (firstDone = resolve));
    const store = new MysqlTextImageMapStore(db.db, db.pool);
    const late = Object.assign(Object.create(store) as MysqlTextImageMapStore, {
      exclusively: async (catalogId: string, work: () => Promise<void>) => {
        await firstFitted;
        return store.exclusively(catalogId, work);
      },
    });
    const secondFits: MapFitReport[] = [];
    const second = new TextImageMapRefresher(late, MODEL, { maxSamples: MAX_SAMPLES, onFit: (f) => secondFits.push(f) }, createLogger({ level: "silent" }));
    const secondRun = second.refresh([CATALOG]);
    await first.maps.refresh([CATALOG]);
    firstDone();
    await secondRun;
    expect(first.fits.map((f) => f.outcome)).toEqual(["fitted"]);
    expect(secondFits).toEqual([]);
  });

  it("records a refused save, backs off, logs one short line without values, and keeps the last map", { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info" }, { write: (line: string) => void lines.push(line) });
    const before = await mapRow();
    const bytesBefore = await readMapBytes(db.db, CATALOG);
    // Make the map due (as a recipe change would), then let the server refuse the chunks.
    await db.db.update(catalogTextMaps).set({ modelVersion: "an-older-recipe" }).where(eq(catalogTextMaps.catalogId, CATALOG));
    await setPacketLimit(256 * 1024);
    try {
      const { maps, fits } = refresher(log);
      await maps.refresh([CATALOG]);
      expect(fits.map((f) => f.outcome)).toEqual(["failed"]);
      const [failure] = await db.db.select().from(catalogTextMapFailures).where(eq(catalogTextMapFailures.catalogId, CATALOG));
      expect(failure).toMatchObject({ failures: 1 });
      expect(failure!.retryAt.getTime() - Date.now()).toBeGreaterThan(50_000);
      expect(failure!.reason.length).toBeLessThanOrEqual(300);

      // Backed off: the next batches do not fit again.
      await maps.refresh([CATALOG]);
      await maps.refresh([CATALOG]);
      expect(fits).toHaveLength(1);

      // The catalog keeps its last good map, readable as before.
      const after = await mapRow();
      expect(after).toMatchObject({ modelVersion: "an-older-recipe", generation: before!.generation, trainedOn: before!.trainedOn });
      expect((await readMapBytes(db.db, CATALOG))!.equals(bytesBefore!)).toBe(true);

      // Once the wait is over it tries again, and waits four times longer after a second failure.
      await db.db.update(catalogTextMapFailures).set({ retryAt: new Date(Date.now() - 1000) }).where(eq(catalogTextMapFailures.catalogId, CATALOG));
      await maps.refresh([CATALOG]);
      expect(fits.map((f) => f.outcome)).toEqual(["failed", "failed"]);
      const [second] = await db.db.select().from(catalogTextMapFailures).where(eq(catalogTextMapFailures.catalogId, CATALOG));
      expect(second!.failures).toBe(2);
      expect(second!.retryAt.getTime() - Date.now()).toBeGreaterThan(200_000);
    } finally {
      await setPacketLimit(FOUR_MB);
    }

    // One line per failed attempt, each under the cap, naming the failure without the statement's values.
    const failedLines = lines.filter((l) => l.includes("map fit failed"));
    expect(failedLines).toHaveLength(2);
    for (const line of lines) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_LOG_LINE_BYTES);
    const logged = failedLines.join("\n");
    expect(logged).not.toMatch(/params/i);
    expect(logged).not.toMatch(/\d\.\d{6}/); // no floats: the map's values
    expect(logged).not.toMatch(/[0-9a-f]{64}/i); // no blobs in hex
    expect(JSON.parse(failedLines[0]!)).toMatchObject({ level: 40, catalogId: CATALOG, failures: 1 });

    // With the limit back, the next attempt after the wait succeeds and clears the failure.
    await db.db.update(catalogTextMapFailures).set({ retryAt: new Date(Date.now() - 1000) }).where(eq(catalogTextMapFailures.catalogId, CATALOG));
    const { maps, fits } = refresher(log);
    await maps.refresh([CATALOG]);
    expect(fits.map((f) => f.outcome)).toEqual(["fitted"]);
    expect(await db.db.select().from(catalogTextMapFailures)).toHaveLength(0);
    expect((await mapRow())!.generation).toBe(before!.generation! + 1);
  });
});
