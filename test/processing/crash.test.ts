import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { samplePhotos } from "../support/sample-photos.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { waitFor } from "../support/wait-for.js";
import { cacheDir } from "../support/cache-dir.js";

// The API runs without workers; processing happens in real child processes, one of which is
// killed with SIGKILL in the middle of its batch.
const PRODUCTS = 40;
let server: TestServer;
let images: ImageServer;
let api: RestClient;
const children: ChildProcess[] = [];
const org = randomUUID();

beforeAll(async () => {
  const photos = await samplePhotos(cacheDir);
  images = await startImageServer();
  const names = Object.keys(photos) as (keyof typeof photos)[];
  for (let i = 0; i < PRODUCTS; i++) images.route(`/p${i}.png`, serveBytes(photos[names[i % names.length]!]!, "image/png", 150));
  server = await startTestServer({ WORKERS: "0", CACHE_DIR: cacheDir });
  api = restClient(server.restUrl, await server.createKey(org));
}, 120_000);
afterAll(async () => {
  // Children must be gone before their database is dropped under them.
  await Promise.all(
    children.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? undefined
        : new Promise((resolve) => {
            child.once("exit", resolve);
            child.kill("SIGKILL");
          }),
    ),
  );
  await server?.close();
  await images?.close();
});

function startWorker(): ChildProcess {
  // node itself with tsx as a loader: one process, so SIGKILL really kills the worker (the tsx
  // CLI would run it in a grandchild that survives).
  const child = spawn(process.execPath, ["--import", "tsx", "src/apps/worker/main.ts"], {
    env: {
      ...process.env,
      MYSQL_URL: server.config.mysqlUrl,
      REDIS_URL: server.config.redis.url,
      REDIS_KEY_PREFIX: server.config.redis.keyPrefix,
      DATA_DIR: server.config.dataDir,
      CACHE_DIR: cacheDir,
      IMAGE_FETCH_ALLOW_PRIVATE: "true",
      PROCESSING_LEASE_MS: "3000",
      PROCESSING_BATCH_SIZE: "8",
      PROCESSING_IDLE_POLL_MS: "100",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  children.push(child);
  return child;
}

describe("a worker killed mid-batch", () => {
  it("loses nothing: the rest is processed after restart, by several workers at once", { timeout: 120_000 }, async () => {
    const catalog = `/organizations/${org}/catalogs/${(await api.post(`/organizations/${org}/catalogs`, { name: "crash" })).body.id}`;
    const batch = Array.from({ length: PRODUCTS }, (_, i) => ({ id: `p${i}`, imageUrl: images.url(`/p${i}.png`), descriptor: `product ${i}` }));
    expect((await api.post(`${catalog}/products`, batch)).body.count).toBe(PRODUCTS);
    const progress = async () => (await api.get(`${catalog}/progress`)).body;

    const victim = startWorker();
    const before = await waitFor(async () => {
      const p = await progress();
      return p.processed >= 3 ? p : undefined;
    }, 60_000, "the first worker to make progress");
    victim.kill("SIGKILL");
    await new Promise((resolve) => victim.once("exit", resolve));
    const atDeath = await progress();
    expect(atDeath.processing).toBeGreaterThan(0);
    expect(before.error).toBe(0);

    // Two fresh workers share what is left, including the dead worker's leased products.
    startWorker();
    startWorker();
    const done = await waitFor(async () => {
      const p = await progress();
      return p.processing === 0 ? p : undefined;
    }, 90_000, "every product to be processed");
    const { textImageMap, ...counts } = done;
    expect(counts).toEqual({ status: "PROCESSED", total: PRODUCTS, processing: 0, processed: PRODUCTS, error: 0 });
    expect(textImageMap).toBeDefined();

    const [rows] = await server.app.mysql.pool.query(
      "SELECT COUNT(*) AS n FROM product_embeddings e JOIN products p ON p.catalog_id = e.catalog_id AND p.id = e.product_id WHERE p.catalog_id = ?",
      [catalog.split("/").pop()],
    );
    expect((rows as any[])[0].n).toBe(PRODUCTS);
  });
});
