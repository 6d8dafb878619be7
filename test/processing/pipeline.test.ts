import { createHash, createHmac, randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { startTestServerWithWorker } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";
import { cacheDir } from "../support/cache-dir.js";
import { IMAGE_ENCODER_VERSION } from "../../src/embeddings/index.js";
import { cosine } from "../support/vectors.js";

let server: TestServer;
let images: ImageServer;
let api: RestClient;
let photos: Record<string, Buffer>;
const org = randomUUID();

beforeAll(async () => {
  photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  server = await startTestServerWithWorker({
    IMAGE_FETCH_TIMEOUT_MS: "1500",
    IMAGE_MAX_BYTES: String(2 * 1024 * 1024),
    PROCESSING_RETRY_BASE_MS: "50",
    PROCESSING_MAX_ATTEMPTS: "3",
    // Mild, so that this suite's workers still get the CPU while other test files run.
    WORKER_NICENESS: "2",
  });
  api = restClient(server.restUrl, await server.createKey(org));
}, 180_000);
// Closing stops the worker (the one started after the last test's SIGKILL may still be loading its
// models) and drops the scratch database: once, in a full parallel run, that took over 60 s.
afterAll(async () => {
  await server?.close();
  await images?.close();
}, 180_000);

async function newCatalog(): Promise<string> {
  const res = await api.post(`/organizations/${org}/catalogs`, { name: `c-${randomUUID()}` });
  return `/organizations/${org}/catalogs/${res.body.id}`;
}

const settled = (catalog: string, total: number) =>
  waitFor(
    async () => {
      const progress = (await api.get(`${catalog}/progress`)).body;
      return progress.total === total && progress.processing === 0 ? progress : undefined;
    },
    60_000,
    "processing to settle",
  );

describe("processing", () => {
  it("takes products from PROCESSING to PROCESSED with a stored image and embeddings", async () => {
    images.route("/coffee.png", serveBytes(photos.coffee!, "image/png"));
    images.route("/cat.png", serveBytes(photos.chelsea!, "image/png"));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    expect((await api.get(`${catalog}/progress`)).body).toEqual({ status: "EMPTY", total: 0, processing: 0, processed: 0, error: 0, textImageMap: { trainedOn: 0 } });

    await api.post(`${catalog}/products`, [
      { id: "coffee", imageUrl: images.url("/coffee.png"), descriptor: "A cup of coffee" },
      { id: "cat", imageUrl: images.url("/cat.png"), descriptor: "Tabby cat" },
    ]);
    expect((await api.get(`/organizations/${org}/catalogs`)).body.find((c: any) => c.id === catalogId).status).toMatch(/PROCESSING|PROCESSED/);

    expect(await settled(catalog, 2)).toEqual({ status: "PROCESSED", total: 2, processing: 0, processed: 2, error: 0, textImageMap: { trainedOn: 0 } });
    const product = (await api.get(`${catalog}/products/coffee`)).body;
    expect(product.status).toBe("PROCESSED");
    expect(product.error).toBeUndefined();
    expect(product.objectUrl).toMatch(new RegExp(`^${server.restUrl}/objects/${catalogId}/[0-9a-f]{64}\\.jpg$`));

    const stored = await fetch(product.objectUrl);
    expect(stored.status).toBe(200);
    expect(stored.headers.get("content-type")).toBe("image/jpeg");
    const storedBytes = Buffer.from(await stored.arrayBuffer());
    const meta = await sharp(storedBytes).metadata();
    expect(meta.format).toBe("jpeg");

    // Not computable from the catalog id and the public image: named by an HMAC of the image's
    // hash under the secret kept in DATA_DIR.
    const sourceSha = createHash("sha256").update(photos.coffee!).digest("hex");
    const secret = readFileSync(join(server.config.dataDir, "object-url-secret"), "utf8").trim();
    expect(product.objectUrl).not.toContain(sourceSha);
    const name = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${catalogId}/${sourceSha}`).digest("hex");
    expect(product.objectUrl).toBe(`${server.restUrl}/objects/${catalogId}/${name}.jpg`);
    // Images stored before the HMAC, under the bare hash, are still served at their old URL.
    writeFileSync(join(server.config.dataDir, "objects", catalogId, `${sourceSha}.jpg`), storedBytes);
    expect((await fetch(`${server.restUrl}/objects/${catalogId}/${sourceSha}.jpg`)).status).toBe(200);

    const [rows] = await server.app.mysql.pool.query(
      "SELECT product_id, model_version, LENGTH(image) AS image_bytes, LENGTH(colour) AS colour_bytes, LENGTH(text) AS text_bytes FROM product_embeddings WHERE catalog_id = ? ORDER BY product_id",
      [catalogId],
    );
    expect(rows).toHaveLength(2);
    for (const row of rows as any[]) {
      expect(row.model_version).toMatch(/mnv2/);
      expect(row.image_bytes).toBeGreaterThan(1000);
      expect(row.colour_bytes).toBeGreaterThan(0);
      expect(row.text_bytes).toBeGreaterThan(0);
    }
    expect((await api.get(`/organizations/${org}/catalogs`)).body.find((c: any) => c.id === catalogId).status).toBe("PROCESSED");
  });

  it("marks permanent failures ERROR with a reason people can read, shown by Get and List", async () => {
    images.route("/html", (_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>hi</html>"));
    images.route("/fake.jpg", (_req, res) => res.writeHead(200, { "content-type": "image/jpeg" }).end(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(500, 7)])));
    images.route("/huge.jpg", (_req, res) => {
      res.writeHead(200, { "content-type": "image/jpeg" });
      res.end(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(3 * 1024 * 1024)]));
    });
    images.route("/slow.jpg", (_req, res) => setTimeout(() => res.writeHead(200, { "content-type": "image/jpeg" }).end(photos.coffee), 5000));
    images.route("/loop-a", (_req, res) => res.writeHead(302, { location: images.url("/loop-b") }).end());
    images.route("/loop-b", (_req, res) => res.writeHead(302, { location: images.url("/loop-a") }).end());
    images.route("/ok.png", serveBytes(photos.coffee!, "image/png"));
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [
      { id: "missing", imageUrl: images.url("/nothing-here.jpg") },
      { id: "html", imageUrl: images.url("/html") },
      { id: "corrupt", imageUrl: images.url("/fake.jpg") },
      { id: "huge", imageUrl: images.url("/huge.jpg") },
      { id: "slow", imageUrl: images.url("/slow.jpg") },
      { id: "loop", imageUrl: images.url("/loop-a") },
      { id: "fine", imageUrl: images.url("/ok.png") },
    ]);
    expect(await settled(catalog, 7)).toMatchObject({ status: "WARNING", processed: 1, error: 6 });

    const reasons = Object.fromEntries(
      (await api.get(`${catalog}/products?status=ERROR&page_size=100`)).body.data.map((p: any) => [p.id, p.error]),
    );
    expect(reasons.missing).toMatch(/404/);
    expect(reasons.html).toMatch(/not an image/);
    expect(reasons.corrupt).toMatch(/could not be decoded/);
    expect(reasons.huge).toMatch(/larger than/);
    expect(reasons.slow).toMatch(/gave up after 3 attempts: .*timed out/);
    expect(reasons.loop).toMatch(/redirect/);
    expect((await api.get(`${catalog}/products/missing`)).body).toMatchObject({ status: "ERROR", error: reasons.missing });
    expect((await api.get(`${catalog}/products/fine`)).body.error).toBeUndefined();
  });

  it("retries transient failures and succeeds when the host recovers", async () => {
    let calls = 0;
    images.route("/flaky.png", (req, res) => {
      calls++;
      if (calls <= 2) res.writeHead(503).end("busy");
      else serveBytes(photos.coffee!, "image/png")(req, res);
    });
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [{ id: "flaky", imageUrl: images.url("/flaky.png") }]);
    expect(await settled(catalog, 1)).toMatchObject({ status: "PROCESSED", processed: 1 });
    expect(calls).toBe(3);
  });

  it("walks the catalog status to ERROR when every product fails", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [{ id: "a", imageUrl: images.url("/gone-a.jpg") }, { id: "b", imageUrl: images.url("/gone-b.jpg") }]);
    expect((await settled(catalog, 2)).status).toBe("ERROR");
  });

  it("reprocesses a re-created product without downloading an unchanged image again", async () => {
    images.route("/same.png", serveBytes(photos.chelsea!, "image/png"));
    images.route("/same-again.png", serveBytes(photos.chelsea!, "image/png"));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    await api.post(`${catalog}/products`, [{ id: "p", imageUrl: images.url("/same.png"), descriptor: "cat" }]);
    await settled(catalog, 1);
    const first = (await api.get(`${catalog}/products/p`)).body;
    expect(images.hits("/same.png")).toBe(1);
    const embeddingOf = async () =>
      ((await server.app.mysql.pool.query("SELECT image, text FROM product_embeddings WHERE catalog_id = ? AND product_id = 'p'", [catalogId]))[0] as any[])[0];
    const before = await embeddingOf();

    // Same URL, new descriptor: no download, new text vector, same image vector.
    await api.post(`${catalog}/products`, [{ id: "p", imageUrl: images.url("/same.png"), descriptor: "a sleepy tabby" }]);
    expect((await api.get(`${catalog}/products/p`)).body.status).toMatch(/PROCESSING|PROCESSED/);
    await settled(catalog, 1);
    expect(images.hits("/same.png")).toBe(1);
    const after = await embeddingOf();
    expect(Buffer.compare(after.image, before.image)).toBe(0);
    expect(Buffer.compare(after.text, before.text)).not.toBe(0);

    // New URL, same bytes: downloaded once, but the stored copy and vectors are kept.
    await api.post(`${catalog}/products`, [{ id: "p", imageUrl: images.url("/same-again.png"), descriptor: "a sleepy tabby" }]);
    await settled(catalog, 1);
    expect(images.hits("/same-again.png")).toBe(1);
    const last = (await api.get(`${catalog}/products/p`)).body;
    expect(last).toMatchObject({ status: "PROCESSED", objectUrl: first.objectUrl, createAt: first.createAt });
    expect(Buffer.compare((await embeddingOf()).image, before.image)).toBe(0);
  });

  it("stores a plain full-size JPEG as fetched, a sideways phone photo upright and without its EXIF; both embed alike", async () => {
    const plain = await sharp(photos.coffee!).resize(900, 1200, { fit: "cover" }).jpeg({ quality: 90 }).toBuffer();
    // The same photo as a phone stores it: pixels sideways, orientation 6, camera and GPS in EXIF.
    const sideways = await sharp(plain)
      .rotate(-90)
      .withExif({ IFD0: { Make: "PhoneCo", Model: "Pocket 12" }, IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 0/1" } })
      .withMetadata({ orientation: 6 })
      .jpeg({ quality: 90 })
      .toBuffer();
    images.route("/plain.jpg", serveBytes(plain, "image/jpeg"));
    images.route("/sideways.jpg", serveBytes(sideways, "image/jpeg"));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    await api.post(`${catalog}/products`, [
      { id: "plain", imageUrl: images.url("/plain.jpg"), descriptor: "coffee" },
      { id: "sideways", imageUrl: images.url("/sideways.jpg"), descriptor: "coffee" },
    ]);
    expect(await settled(catalog, 2)).toMatchObject({ processed: 2 });
    const stored = async (id: string) => Buffer.from(await (await fetch((await api.get(`${catalog}/products/${id}`)).body.objectUrl)).arrayBuffer());

    const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
    expect(sha(await stored("plain"))).toBe(sha(plain));
    const upright = await stored("sideways");
    const meta = await sharp(upright).metadata();
    expect([meta.format, meta.width, meta.height, meta.orientation, meta.exif]).toEqual(["jpeg", 768, 1024, undefined, undefined]);
    expect(upright.toString("latin1")).not.toContain("PhoneCo");

    // The encoders read the fetched file and apply its orientation: one product, one vector.
    const [rows] = await server.app.mysql.pool.query("SELECT product_id, image FROM product_embeddings WHERE catalog_id = ? ORDER BY product_id", [catalogId]);
    const [a, b] = (rows as { image: Buffer }[]).map((r) => Float32Array.from({ length: r.image.length / 4 }, (_, i) => r.image.readFloatLE(4 * i)));
    expect(cosine(a!, b!)).toBeGreaterThan(0.97);
  });

  it("runs its worker processes WORKER_NICENESS nice steps below the API process", () => {
    const pids = server.app.workers.pids();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) expect(getPriority(pid)).toBe(Math.min(19, getPriority() + 2));
  });

  it("deletes a product's embeddings with the product", async () => {
    images.route("/late.png", serveBytes(photos.coffee!, "image/png", 400));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    await api.post(`${catalog}/products`, [{ id: "x", imageUrl: images.url("/late.png") }]);
    await settled(catalog, 1);
    await api.delete(`${catalog}/products/x`);
    const [rows] = await server.app.mysql.pool.query("SELECT COUNT(*) AS n FROM product_embeddings WHERE catalog_id = ?", [catalogId]);
    expect((rows as any[])[0].n).toBe(0);
  });

  it("replaces a worker process that dies, and the work still gets done", async () => {
    const [pid] = server.app.workers.pids();
    expect(pid).toBeDefined();
    process.kill(pid!, "SIGKILL");
    await waitFor(async () => {
      const pids = server.app.workers.pids();
      return pids.length === 1 && pids[0] !== pid;
    }, 10_000, "a new worker process");
    images.route("/after-crash.png", serveBytes(photos.rocket!, "image/png"));
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [{ id: "r", imageUrl: images.url("/after-crash.png") }]);
    expect(await settled(catalog, 1)).toMatchObject({ status: "PROCESSED", processed: 1 });
  });

  it("fits the catalog's text-to-image map once it has enough described products, and refits as it grows", async () => {
    const names = ["coffee", "chelsea", "rocket", "astronaut", "motorcycle_left", "motorcycle_right"] as const;
    const words = { coffee: "coffee cup", chelsea: "tabby cat", rocket: "space rocket", astronaut: "astronaut suit", motorcycle_left: "red motorcycle", motorcycle_right: "red motorbike" };
    for (const name of names) images.route(`/train/${name}.png`, serveBytes(photos[name]!, "image/png"));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    const batch = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, k) => {
        const name = names[(from + k) % names.length]!;
        return { id: `t${from + k}`, imageUrl: images.url(`/train/${name}.png`), descriptor: `${words[name]} ${from + k}` };
      });
    const mapRow = async () =>
      ((await server.app.mysql.pool.query("SELECT trained_on, model_version, bytes FROM catalog_text_maps WHERE catalog_id = ?", [catalogId]))[0] as any[])[0];

    await api.post(`${catalog}/products`, batch(0, 12));
    await settled(catalog, 12);
    expect(await mapRow()).toBeUndefined();

    await api.post(`${catalog}/products`, batch(12, 24));
    await settled(catalog, 24);
    const first = await waitFor(mapRow, 10_000, "the first map");
    expect(first.trained_on).toBe(24);
    expect(first.model_version).toMatch(/mnv2.*glove.*colour.*ridge/);
    expect(first.bytes).toBeGreaterThan(100 * 1291 * 4 - 1);

    await api.post(`${catalog}/products`, batch(24, 32));
    await settled(catalog, 32);
    expect((await waitFor(async () => ((await mapRow()).trained_on === 32 ? mapRow() : undefined), 10_000, "the refit")).trained_on).toBe(32);
  });

  it("re-embeds products whose embeddings come from another model version when a worker starts", async () => {
    images.route("/versioned.png", serveBytes(photos.astronaut!, "image/png"));
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop()!;
    await api.post(`${catalog}/products`, [{ id: "v", imageUrl: images.url("/versioned.png"), descriptor: "astronaut" }]);
    await settled(catalog, 1);
    const version = async () =>
      ((await server.app.mysql.pool.query("SELECT model_version FROM product_embeddings WHERE catalog_id = ? AND product_id = 'v'", [catalogId]))[0] as any[])[0].model_version as string;
    const current = await version();
    await server.app.mysql.pool.query("UPDATE product_embeddings SET model_version = 'an-older-model' WHERE catalog_id = ?", [catalogId]);

    // A worker process starting with the current models finds the stale product.
    const [pid] = server.app.workers.pids();
    process.kill(pid!, "SIGKILL");
    expect(await waitFor(async () => ((await version()) === current ? current : undefined), 30_000, "re-embedding")).toBe(current);
    expect((await api.get(`${catalog}/products/v`)).body.status).toBe("PROCESSED");
  });
});

// The service runs the image model on ONNX Runtime by default; IMAGE_RUNTIME=tfjs forces
// TensorFlow.js (wasm), the reference implementation and the fallback. Both must store the same
// vectors, up to float rounding, under one model version.
describe("IMAGE_RUNTIME", () => {
  let tfjsServer: TestServer;
  let tfjsApi: RestClient;
  beforeAll(async () => {
    tfjsServer = await startTestServerWithWorker({ IMAGE_RUNTIME: "tfjs" });
    tfjsApi = restClient(tfjsServer.restUrl, await tfjsServer.createKey(org));
  }, 180_000);
  afterAll(async () => {
    await tfjsServer?.close();
  });

  it("forced to tfjs, stores ONNX Runtime's vectors under the same model version", async () => {
    images.route("/runtime-coffee.png", serveBytes(photos.coffee!, "image/png"));
    images.route("/runtime-rocket.png", serveBytes(photos.rocket!, "image/png"));
    const products = [
      { id: "coffee", imageUrl: images.url("/runtime-coffee.png"), descriptor: "coffee" },
      { id: "rocket", imageUrl: images.url("/runtime-rocket.png"), descriptor: "rocket" },
    ];
    const stored = async (target: TestServer, client: RestClient) => {
      const res = await client.post(`/organizations/${org}/catalogs`, { name: `runtime-${randomUUID()}` });
      const catalog = `/organizations/${org}/catalogs/${res.body.id}`;
      await client.post(`${catalog}/products`, products);
      await waitFor(
        async () => {
          const progress = (await client.get(`${catalog}/progress`)).body;
          return progress.processed === products.length ? progress : undefined;
        },
        60_000,
        "processing",
      );
      const [rows] = await target.app.mysql.pool.query("SELECT product_id, model_version, image FROM product_embeddings WHERE catalog_id = ? ORDER BY product_id", [res.body.id]);
      return (rows as { product_id: string; model_version: string; image: Buffer }[]).map((r) => ({
        id: r.product_id,
        version: r.model_version,
        image: Float32Array.from({ length: r.image.length / 4 }, (_, i) => r.image.readFloatLE(4 * i)),
      }));
    };
    const [onnx, tfjs] = [await stored(server, api), await stored(tfjsServer, tfjsApi)];
    expect(onnx.map((r) => r.id)).toEqual(["coffee", "rocket"]);
    expect(tfjs.map((r) => r.id)).toEqual(["coffee", "rocket"]);
    for (let i = 0; i < onnx.length; i++) {
      // One version for both runtimes: switching runtime re-embeds nothing.
      expect(onnx[i]!.version.startsWith(`${IMAGE_ENCODER_VERSION}+`), onnx[i]!.version).toBe(true);
      expect(tfjs[i]!.version).toBe(onnx[i]!.version);
      expect(tfjs[i]!.image.length).toBe(1280);
      expect(cosine(onnx[i]!.image, tfjs[i]!.image), onnx[i]!.id).toBeGreaterThan(0.99999);
    }
  });
});
