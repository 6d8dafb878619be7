// The real worker's refit path: a catalog of 60 described products, processed by a real worker
// process in batches of 8, crosses several map refits, fewer while the import is under way; the stored map follows the catalog, each
// fit reaches the service's /metrics, and the index ends up built from the latest map.
import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MysqlIndexSource, MysqlTextImageMapStore, readMapBytes } from "../../src/storage/mysql/index.js";
import { catalogTextMaps } from "../../src/storage/mysql/schema.js";
import { eq } from "drizzle-orm";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServerWithWorker } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";

const COLOURS: [string, string][] = [
  ["red", "#d01010"],
  ["blue", "#1030d0"],
  ["green", "#10a020"],
  ["yellow", "#e8d010"],
  ["black", "#101010"],
];
const SHAPES = ["circle", "square", "triangle"] as const;
const PRODUCTS = 60;

let server: TestServer;
let images: ImageServer;
let api: RestClient;
const org = randomUUID();

/** A 320x320 photo of a coloured shape on a light background, varied in size and place. */
function photo(i: number): Promise<Buffer> {
  const [, fill] = COLOURS[i % COLOURS.length]!;
  const shape = SHAPES[Math.floor(i / COLOURS.length) % SHAPES.length]!;
  const size = 120 + ((i * 37) % 90);
  const x = 40 + ((i * 53) % 100);
  const y = 40 + ((i * 29) % 100);
  const element =
    shape === "circle"
      ? `<circle cx="${x + size / 2}" cy="${y + size / 2}" r="${size / 2}" fill="${fill}"/>`
      : shape === "square"
        ? `<rect x="${x}" y="${y}" width="${size}" height="${size}" fill="${fill}"/>`
        : `<polygon points="${x + size / 2},${y} ${x + size},${y + size} ${x},${y + size}" fill="${fill}"/>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320"><rect width="320" height="320" fill="#f4f1ec"/>${element}</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}

function title(i: number): string {
  return `${COLOURS[i % COLOURS.length]![0]} ${SHAPES[Math.floor(i / COLOURS.length) % SHAPES.length]} print`;
}

beforeAll(async () => {
  images = await startImageServer();
  for (let i = 0; i < PRODUCTS; i++) images.route(`/p${i}.jpg`, serveBytes(await photo(i)));
  server = await startTestServerWithWorker({ PROCESSING_BATCH_SIZE: "8" });
  api = restClient(server.restUrl, await server.createKey(org));
}, 180_000);
afterAll(async () => {
  await server?.close();
  await images?.close();
});

async function fitsFitted(): Promise<number> {
  const text = await (await fetch(`${server.restUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('vitrine_text_map_fits_total{outcome="fitted"}'));
  return line ? Number(line.split(" ").pop()) : 0;
}

describe("a catalog that grows through several map refits in a real worker", () => {
  it("refits less often while the import runs, catches up once it ends, and keeps its index on the latest map", { timeout: 180_000 }, async () => {
    const catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "shapes" })).body.id as string;
    const catalog = `/organizations/${org}/catalogs/${catalogId}`;
    const created = await api.post(
      `${catalog}/products`,
      Array.from({ length: PRODUCTS }, (_, i) => ({ id: `p${i}`, imageUrl: images.url(`/p${i}.jpg`), descriptor: title(i), metadata: { n: i } })),
    );
    expect(created.status).toBe(202);
    await waitFor(async () => ((await api.get(`${catalog}/progress`)).body.processed === PRODUCTS ? true : undefined), 150_000, "all products processed");

    // Batches of 8 described products: fits at 24, then at 48 (twice the last while the import is
    // under way), then at 60 once nothing waits (25% past the last): not at 32, 40 and 56.
    const row = await waitFor(
      async () => {
        const [r] = await server.app.mysql.db.select().from(catalogTextMaps).where(eq(catalogTextMaps.catalogId, catalogId));
        return r && r.describedAtFit === PRODUCTS ? r : undefined;
      },
      30_000,
      "the map to follow the catalog",
    );
    expect(row.trainedOn).toBe(PRODUCTS);
    expect(row.generation).toBeGreaterThanOrEqual(3);
    expect((await readMapBytes(server.app.mysql.db, catalogId))!.length).toBe(row.bytes);
    expect(await waitFor(async () => ((await fitsFitted()) >= 3 ? fitsFitted() : undefined), 10_000, "fits in /metrics")).toBe(3);

    // Progress tells the map's state; a failed fit shows there with its reason and next attempt.
    const progress = (await api.get(`${catalog}/progress`)).body;
    expect(progress.textImageMap).toMatchObject({ trainedOn: row.trainedOn, fittedAt: row.updatedAt.toISOString() });
    expect(progress.textImageMap.lastFailure).toBeUndefined();
    const retryAt = new Date(Date.now() + 60_000);
    await new MysqlTextImageMapStore(server.app.mysql.db, server.app.mysql.pool).recordFailure(catalogId, "Error ER_NET_PACKET_TOO_LARGE", 1, retryAt);
    expect((await api.get(`${catalog}/progress`)).body.textImageMap).toMatchObject({
      trainedOn: row.trainedOn,
      lastFailure: "Error ER_NET_PACKET_TOO_LARGE",
      nextAttemptAt: retryAt.toISOString(),
    });

    // The worker rebuilt the index from the latest map: the version search expects now.
    const { sync, index } = server.app.searchIndex;
    const current = await new MysqlIndexSource(server.app.mysql.db, server.app.mysql.pool).catalog(catalogId);
    expect(await waitFor(async () => ((await index.version(catalogId)) === sync.versionFor(current!.map) ? true : undefined), 30_000, "the index on the latest map")).toBe(true);

    // And search over the mapped photos finds the shapes by their words.
    const res = await api.post("/search", { organizationId: org, catalogId, query: "red circle", topK: 5, visual_weight: 1, similarity_threshold: 0 });
    expect(res.status).toBe(200);
    const titles = res.body.results.map((r: { productId: string }) => title(Number(r.productId.slice(1))));
    expect(titles.filter((t: string) => t.startsWith("red")).length, titles.join(", ")).toBeGreaterThanOrEqual(3);
  });
});
