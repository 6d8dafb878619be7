// IMAGE_MODEL=mobilenet+inception, the opt-in quality image model, the whole way: real photos
// fetched and embedded by both networks in a worker process, stored, a catalog's text-image map
// fitted on them, and undescribed products found by words and by photo; and a deployment that
// switches to it from the default model re-embeds what the default stored.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IMAGE_ENCODER_VERSION, imageEncoderVersion } from "../../src/embeddings/index.js";
import { openImageEncoder } from "../../src/embeddings/image-encoder.js";
import { MysqlIndexSource } from "../../src/storage/mysql/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import type { SamplePhotoName } from "../support/sample-photos.js";
import { startTestServerWithWorker } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { cosine, norm } from "../support/vectors.js";
import { waitFor } from "../support/wait-for.js";

let server: TestServer;
let images: ImageServer;
let api: RestClient;
let photos: Record<SamplePhotoName, Buffer>;
const org = randomUUID();
const QUALITY = imageEncoderVersion("mobilenet+inception");

const WORDS: Partial<Record<SamplePhotoName, string>> = {
  coffee: "coffee cup",
  chelsea: "tabby cat",
  rocket: "space rocket",
  astronaut: "astronaut suit",
  motorcycle_left: "red motorcycle",
};

beforeAll(async () => {
  photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  for (const [name, bytes] of Object.entries(photos)) images.route(`/${name}.png`, serveBytes(bytes, "image/png"));
  server = await startTestServerWithWorker({ IMAGE_MODEL: "mobilenet+inception" });
  api = restClient(server.restUrl, await server.createKey(org));
}, 180_000);
afterAll(async () => {
  await server?.close();
  await images?.close();
});

interface StoredRow {
  product_id: string;
  model_version: string;
  image: Buffer;
}

const floats = (bytes: Buffer) => Float32Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(4 * i));

async function storedEmbeddings(catalogId: string): Promise<StoredRow[]> {
  const [rows] = await server.app.mysql.pool.query("SELECT product_id, model_version, image FROM product_embeddings WHERE catalog_id = ? ORDER BY product_id", [catalogId]);
  return rows as StoredRow[];
}

describe("IMAGE_MODEL=mobilenet+inception", () => {
  let catalogId: string;
  let catalog: string;

  it("stores one 3,328-d vector per product under the quality model's version: MobileNet's vector beside InceptionV3's", { timeout: 120_000 }, async () => {
    catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "quality" })).body.id as string;
    catalog = `/organizations/${org}/catalogs/${catalogId}`;
    // 25 described products over five photos (enough for a map), and the other motorcycle view undescribed.
    const described = Array.from({ length: 25 }, (_, k) => {
      const [name, words] = Object.entries(WORDS)[k % 5]!;
      return { id: `d${k}`, imageUrl: images.url(`/${name}.png`), descriptor: `${words} ${k}`, metadata: { described: true } };
    });
    const undescribed = { id: "u", imageUrl: images.url("/motorcycle_right.png"), descriptor: "", metadata: { described: false } };
    await api.post(`${catalog}/products`, [...described, undescribed]);
    await waitFor(async () => ((await api.get(`${catalog}/progress`)).body.processed === 26 ? true : undefined), 90_000, "processing");

    const rows = await storedEmbeddings(catalogId);
    expect(rows).toHaveLength(26);
    const defaultEncoder = await openImageEncoder();
    try {
      for (const row of rows) {
        expect(row.model_version.startsWith(`${QUALITY}+`), row.model_version).toBe(true);
        const v = floats(row.image);
        expect(v.length).toBe(1280 + 2048);
        expect(norm(v)).toBeCloseTo(1, 5);
        // Equal weight: each network's part has length 1/sqrt(2).
        expect(norm(v.subarray(0, 1280))).toBeCloseTo(Math.SQRT1_2, 5);
      }
      // The MobileNet part is the default model's vector, scaled.
      const u = floats(rows.find((r) => r.product_id === "u")!.image);
      expect(cosine(u.subarray(0, 1280), await defaultEncoder.encode(photos.motorcycle_right))).toBeGreaterThan(0.99999);
    } finally {
      await defaultEncoder.close();
    }
  });

  it("fits the catalog's text-image map on those vectors and finds the undescribed product by words and by photo", { timeout: 60_000 }, async () => {
    const map = await waitFor(
      async () => {
        const [rows] = await server.app.mysql.pool.query("SELECT model_version, trained_on FROM catalog_text_maps WHERE catalog_id = ?", [catalogId]);
        return (rows as { model_version: string; trained_on: number }[])[0];
      },
      30_000,
      "the map",
    );
    expect(map.model_version.startsWith(`${QUALITY}+`), map.model_version).toBe(true);
    expect(map.trained_on).toBe(25);
    // Search answers from the build before the map until the worker's rebuild on it lands.
    const { sync, index } = server.app.searchIndex;
    const current = await new MysqlIndexSource(server.app.mysql.db, server.app.mysql.pool).catalog(catalogId);
    await waitFor(async () => ((await index.version(catalogId)) === sync.versionFor(current!.map) ? true : undefined), 30_000, "the index on the map");

    // Photos alone (visual_weight 1): the map places "motorcycle" where the motorcycle photos are.
    const ranked = await api.post("/search", { organizationId: org, catalogId, query: "motorcycle", topK: 6, visual_weight: 1, similarity_threshold: 0 });
    // Five motorcycles described, the undescribed one among them, before any cat, cup, rocket or astronaut.
    expect(ranked.body.results.map((r: { productId: string }) => r.productId).sort()).toEqual(["d14", "d19", "d24", "d4", "d9", "u"].sort());

    const recs = await api.post("/recs", { organizationId: org, catalogId, productId: "u", topK: 5, visualWeight: 1 });
    expect(recs.status).toBe(200);
    expect(recs.body.results.map((r: { productId: string }) => r.productId).sort()).toEqual(["d14", "d19", "d24", "d4", "d9"].sort());
  });

  it("re-embeds products the default model stored when its worker starts", { timeout: 90_000 }, async () => {
    // As a deployment that ran IMAGE_MODEL=mobilenet finds its products: the default's version and 1280-d vectors.
    const defaultVersion = (v: string) => v.replace(QUALITY, IMAGE_ENCODER_VERSION);
    const before = await storedEmbeddings(catalogId);
    for (const row of before) {
      await server.app.mysql.pool.query("UPDATE product_embeddings SET model_version = ?, image = ? WHERE catalog_id = ? AND product_id = ?", [
        defaultVersion(row.model_version),
        row.image.subarray(0, 1280 * 4),
        catalogId,
        row.product_id,
      ]);
    }
    const [pid] = server.app.workers.pids();
    process.kill(pid!, "SIGKILL");
    const after = await waitFor(
      async () => {
        const rows = await storedEmbeddings(catalogId);
        return rows.every((r) => r.model_version.startsWith(`${QUALITY}+`)) ? rows : undefined;
      },
      60_000,
      "re-embedding",
    );
    expect(after).toHaveLength(26);
    for (const [i, row] of after.entries()) {
      expect(row.image.length).toBe(3328 * 4);
      expect(cosine(floats(row.image), floats(before[i]!.image))).toBeGreaterThan(0.99999);
    }
    expect((await api.get(`${catalog}/products/u`)).body.status).toBe("PROCESSED");
  });
});
