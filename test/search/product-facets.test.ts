// MySQL's product facets against the machine's MariaDB, in a database of their own: written as the
// index sync writes them (products replaced, removed, a catalog's all removed), they name exactly
// the products that pass eq/in filters as matchesFilters defines them; more than asked for is "too
// many"; a catalog whose index was written before them answers "cannot tell" until a backfill from
// its products wrote them; and concurrent writes of interleaved products do not deadlock.
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, JsonValue, NewProduct } from "../../src/catalogs/index.js";
import { filterFacetGroups, matchesFilters } from "../../src/search/index.js";
import type { MetadataFilter } from "../../src/search/index.js";
import { MysqlCatalogRepository, MysqlFacetStore, MysqlProductRepository, openMysql } from "../../src/storage/mysql/index.js";
import type { MysqlConnection } from "../../src/storage/mysql/index.js";
import { catalogs, productFacets } from "../../src/storage/mysql/schema.js";
import { seededRandom } from "../support/random.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "../support/scratch-mysql.js";

const url = scratchDatabaseUrl();
let db: MysqlConnection;
let products: MysqlProductRepository;
let facets: MysqlFacetStore;

beforeAll(async () => {
  db = await openMysql(url);
  products = new MysqlProductRepository(db.db);
  facets = new MysqlFacetStore(db.db);
}, 60_000);
afterAll(async () => {
  await db?.close();
  await dropScratchDatabase(url);
});

async function newCatalog(): Promise<string> {
  const id = randomUUID();
  const now = new Date();
  await new MysqlCatalogRepository(db.db).create({ id, organizationId: randomUUID(), name: id, description: "", createdAt: now, updatedAt: now });
  return id;
}

const product = (id: string, metadata: JsonObject): NewProduct => ({ id, imageUrl: `https://img.example/${id}.jpg`, descriptor: id, metadata });

/** Scalars mixed on purpose: "1" vs 1 vs true, long strings that differ at the end, a field named `rank`. */
const SCALARS: (string | number | boolean)[] = ["1", 1, true, false, 0, "", "a", "A", 'it\'s "q"\n', "x".repeat(200), "x".repeat(199) + "y", 2.5, "赤"];
const FIELDS = ["brand", "size", "a.b", "with space", "rank"];

function randomMetadata(random: () => number): JsonObject {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const m: JsonObject = {};
  for (const field of FIELDS) {
    const r = random();
    if (r < 0.25) continue;
    let value: JsonValue = pick(SCALARS);
    if (r > 0.85) value = [pick(SCALARS), pick(SCALARS), { nested: pick(SCALARS) }, null];
    else if (r > 0.8) value = { nested: pick(SCALARS) };
    else if (r > 0.77) value = null;
    m[field] = value;
  }
  return m;
}

function randomFilters(random: () => number): MetadataFilter[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const fields = FIELDS.filter((f) => f !== "rank");
  const listed = SCALARS.filter((v) => typeof v !== "boolean") as (string | number)[];
  const one = (): MetadataFilter =>
    random() < 0.6 ? { field: pick(fields), operator: "eq", value: pick(SCALARS) } : { field: pick(fields), operator: "in", value: [pick(listed), pick(listed)] };
  return random() < 0.7 ? [one()] : [one(), one()];
}

describe("product facets in MySQL", () => {
  it("name exactly the products passing eq/in filters, through replacements and removals", async () => {
    const catalogId = await newCatalog();
    const random = seededRandom(7);
    const held = new Map<string, JsonObject>();
    const write = async (ids: string[]) => {
      const written = ids.map((productId) => ({ productId, metadata: randomMetadata(random) }));
      await facets.write(catalogId, written);
      for (const p of written) held.set(p.productId, p.metadata);
    };
    await write(Array.from({ length: 400 }, (_, i) => `p-${i}`));
    // Some written again with other metadata, some removed.
    await write(Array.from({ length: 100 }, (_, i) => `p-${i * 3}`));
    const gone = Array.from({ length: 60 }, (_, i) => `p-${i * 5 + 1}`);
    await facets.remove(catalogId, gone);
    for (const id of gone) held.delete(id);

    let compared = 0;
    for (let round = 0; round < 200; round++) {
      const filters = randomFilters(random);
      const expected = [...held].filter(([, m]) => matchesFilters(filters, { ...m, rank: "NO_BOOST" })).map(([id]) => id);
      const named = await facets.productsWith(catalogId, filterFacetGroups(filters), 1000);
      expect(Array.isArray(named), JSON.stringify(filters)).toBe(true);
      // Both groups of a pair read whole: the intersection is exact.
      expect([...(named as string[])].sort(), JSON.stringify(filters)).toEqual(expected.sort());
      if (expected.length > 0) compared++;
    }
    expect(compared).toBeGreaterThan(50);
  });

  it('answers "too many" past `most`, narrows by the groups read whole, and cannot tell of `rank` or of another catalog', async () => {
    const catalogId = await newCatalog();
    await facets.write(
      catalogId,
      Array.from({ length: 50 }, (_, i) => ({ productId: `q-${i}`, metadata: { colour: "red", size: i < 3 ? "xs" : "m", rank: "BOOST" } })),
    );
    const red = filterFacetGroups([{ field: "colour", operator: "eq", value: "red" }]);
    expect(await facets.productsWith(catalogId, red, 49)).toBe("too many");
    expect(await facets.productsWith(catalogId, red, 50)).toHaveLength(50);
    const redXs = filterFacetGroups([
      { field: "colour", operator: "eq", value: "red" },
      { field: "size", operator: "eq", value: "xs" },
    ]);
    expect([...((await facets.productsWith(catalogId, redXs, 10)) as string[])].sort()).toEqual(["q-0", "q-1", "q-2"]);
    expect(await facets.productsWith(catalogId, filterFacetGroups([{ field: "rank", operator: "eq", value: "BOOST" }]), 10)).toBeUndefined();
    // An unknown catalog has nothing to tell.
    expect(await facets.productsWith(randomUUID(), red, 10)).toBeUndefined();
    // Every product removed: no facet left, past one statement's 10,000 rows too.
    await facets.write(
      catalogId,
      Array.from({ length: 2000 }, (_, i) => ({ productId: `z-${i}`, metadata: { a: i, b: `b${i}`, c: [1, 2, 3, i], d: true } })),
    );
    expect((await db.db.select().from(productFacets).where(eq(productFacets.catalogId, catalogId))).length).toBe(50 * 2 + 2000 * 7 - 3); // c's array holds i again for i = 1, 2, 3
    await facets.remove(catalogId, undefined);
    expect(await db.db.select().from(productFacets).where(eq(productFacets.catalogId, catalogId))).toEqual([]);
  });

  it("of a catalog indexed before them: cannot tell until a backfill from its products wrote them, then names them", async () => {
    const catalogId = await newCatalog();
    await products.upsertBatch(
      catalogId,
      Array.from({ length: 1234 }, (_, i) => product(`r-${String(i).padStart(4, "0")}`, { brand: i % 100 === 0 ? "rare" : "common", tags: [`t${i % 7}`] })),
      new Date(),
    );
    // As the migration leaves such a catalog: no facets, not complete.
    await db.db.delete(productFacets).where(eq(productFacets.catalogId, catalogId));
    await db.db.update(catalogs).set({ facetsComplete: false }).where(eq(catalogs.id, catalogId));
    const outcomes: unknown[] = [];
    const backfilling = new MysqlFacetStore(db.db, { onBackfill: (id, outcome) => outcomes.push([id, outcome]) });
    const rare = filterFacetGroups([{ field: "brand", operator: "eq", value: "rare" }]);
    expect(await backfilling.productsWith(catalogId, rare, 100)).toBeUndefined();
    await backfilling.settled();
    expect(outcomes).toEqual([[catalogId, { products: 1234 }]]);
    expect(await backfilling.productsWith(catalogId, rare, 100)).toHaveLength(13);
    const t3 = filterFacetGroups([{ field: "tags", operator: "in", value: ["t3", "t4"] }]);
    expect(await backfilling.productsWith(catalogId, t3, 1000)).toHaveLength([...Array(1234).keys()].filter((i) => i % 7 === 3 || i % 7 === 4).length);
    // Another process finds it complete.
    expect(await new MysqlFacetStore(db.db).productsWith(catalogId, rare, 100)).toHaveLength(13);
  });

  it("take no gap locks that deadlock writes of interleaved products at once (a sync beside a backfill, two processes' backfills)", async () => {
    const catalogId = await newCatalog();
    // Eight writes at once whose ids interleave, each replacing some of the others' products.
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 300 }, (_, i) => ({ productId: `s-${String(i * 8 + ((b + (i % 3)) % 8)).padStart(5, "0")}`, metadata: { shop: `shop-${b}`, size: i % 5 } })),
    );
    // Three rounds: under REPEATABLE READ, about every other round deadlocked.
    for (let round = 0; round < 3; round++) await Promise.all(batches.map((batch) => facets.write(catalogId, batch)));
    const all = await facets.productsWith(catalogId, filterFacetGroups([{ field: "size", operator: "in", value: [0, 1, 2, 3, 4] }]), 10_000);
    const ids = new Set(batches.flat().map((p) => p.productId));
    expect(new Set(all as string[])).toEqual(ids);
  });
});
