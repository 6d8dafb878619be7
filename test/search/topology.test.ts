// Which Redis the search suite runs on: one server in the "single" project, a Redis Cluster of 3
// masters in the "cluster" project, where catalogs spread over the shards and each catalog's keys
// stay on one of them (one hash tag per catalog).
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { forEachPrimary } from "../../src/storage/redis/index.js";
import { createCatalog, openText, postProducts, processProducts, serve, syntheticProducts } from "../support/search-fixture.js";
import type { Served } from "../support/search-fixture.js";
import type { OpenedSentenceEncoder } from "../../src/embeddings/index.js";

let s: Served;
let text: OpenedSentenceEncoder;
beforeAll(async () => {
  s = await serve();
  text = await openText();
}, 120_000);
afterAll(async () => {
  await s?.server.close();
  await text?.close();
});

describe("the Redis topology of this run", () => {
  it("is what the project asked for, and catalogs live each on one node", { timeout: 120_000 }, async () => {
    const { redis } = s.server.app;
    const clustered = Boolean(inject("redisClusterNodes"));
    expect(redis instanceof Cluster).toBe(clustered);
    expect(redis instanceof Redis).toBe(!clustered);

    const catalogIds: string[] = [];
    for (let c = 0; c < 6; c++) {
      const catalogId = await createCatalog(s, `shard-${c}`);
      const specs = syntheticProducts(text, 3, { seed: 100 + c, idOf: (i) => `c${c}-${i}` });
      await postProducts(s, catalogId, specs);
      await processProducts(s, specs);
      catalogIds.push(catalogId);
    }
    const prefix = s.server.config.redis.keyPrefix;
    const perNode = await forEachPrimary(redis, (node) => node.keys(`${prefix}*`));
    expect(perNode).toHaveLength(clustered ? 3 : 1);
    for (const catalogId of catalogIds) {
      const holders = perNode.filter((keys) => keys.some((k) => k.includes(catalogId)));
      expect(holders, `catalog ${catalogId} on one node`).toHaveLength(1);
    }
    // Six catalogs over three shards: more than one shard holds some.
    if (clustered) expect(perNode.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
    for (const catalogId of catalogIds) {
      const res = await s.api.post("/search", { organizationId: s.org, catalogId, query: "red dress", topK: 3, visual_weight: 0.5, similarity_threshold: 0 });
      expect(res.status).toBe(200);
      expect(res.body.results).toHaveLength(3);
    }
  });
});
