import { execFile } from "node:child_process";
import { deleteKeys, keysMatching } from "../support/redis-keys.js";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheDir } from "../support/cache-dir.js";
import { restClient } from "../support/rest-client.js";
import { colourHistogram, completeWith, randomUnit, seededRandom } from "../support/synthetic-processing.js";
import type { SyntheticEmbeddings } from "../support/synthetic-processing.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

const run = promisify(execFile);
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ CACHE_DIR: cacheDir });
}, 120_000);
afterAll(() => server?.close());

function cli(...args: string[]) {
  return run("node_modules/.bin/tsx", ["src/apps/cli/main.ts", ...args, "--url", server.restUrl], {
    env: { ...process.env, ADMIN_API_KEY: server.adminKey },
  });
}

describe("vitrine catalogs reindex", () => {
  it("rebuilds the catalog's search index from MySQL and says how many products it holds", async () => {
    const org = randomUUID();
    const api = restClient(server.restUrl, await server.createKey(org));
    const catalogId = (await api.post(`/organizations/${org}/catalogs`, { name: "cli" })).body.id as string;
    const random = seededRandom(3);
    const embeddings = new Map<string, SyntheticEmbeddings>();
    const products = ["a", "b", "c"].map((id, i) => {
      embeddings.set(id, { image: randomUnit(random, 1280), colour: colourHistogram(random, i), text: randomUnit(random, 100) });
      return { id, imageUrl: `https://images.example/${id}.jpg`, descriptor: `item ${id}` };
    });
    await api.post(`/organizations/${org}/catalogs/${catalogId}/products`, products);
    await completeWith(server, embeddings);
    await deleteKeys(server.app.redis, await keysMatching(server.app.redis, `${server.config.redis.keyPrefix}*`));

    const out = JSON.parse((await cli("catalogs", "reindex", "--org", org, "--catalog", catalogId)).stdout);
    expect(out).toEqual({ status: "success", message: "search index rebuilt with 3 products", indexed: 3, parts: 1 });
    expect(await server.app.redis.call("VCARD", `${server.config.redis.keyPrefix}{${catalogId}}:vectors`)).toBe(3);

    // --parts splits it; a value that is not a whole number never leaves the CLI.
    const split = JSON.parse((await cli("catalogs", "reindex", "--org", org, "--catalog", catalogId, "--parts", "2")).stdout);
    expect(split).toEqual({ status: "success", message: "search index rebuilt with 3 products in 2 parts", indexed: 3, parts: 2 });
    // Each part's meta hash (a part's vector set exists only while it holds a product).
    expect(await keysMatching(server.app.redis, `${server.config.redis.keyPrefix}{${catalogId}~*}:meta`)).toHaveLength(2);
    expect(await server.app.redis.exists(`${server.config.redis.keyPrefix}{${catalogId}}:vectors`)).toBe(0);
    await expect(cli("catalogs", "reindex", "--org", org, "--catalog", catalogId, "--parts", "two")).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--parts must be a whole number/),
    });
    await expect(cli("catalogs", "reindex", "--org", org, "--catalog", randomUUID())).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/not found/),
    });
  });
});
