// MySQL's facets (search/filter-facets.ts) of the metadata of the products in each catalog's
// search index, written by the index sync beside its own writes to the index: the products a
// selective eq/in filter can pass are then one indexed read (a few milliseconds for a few hundred
// products) instead of a filtered walk or an exact scan of the catalog's vector set, which
// evaluates the filter on every element (about 40 ms at 100k products, 400 ms at 1M). They live
// on disk beside the products, not in Redis's memory, where field postings cost 1.6 KB a product
// (SEARCH_FILTER_POSTINGS); and they are written at the index's pace (its processing), so creating
// products is not slowed by them (written with every product, they took the bench's 100,000
// Create Products from 15 s to 59).
//
// A catalog whose index was written before the table existed is not complete
// (catalogs.facets_complete): the first lookup of it starts writing every one of its products'
// facets from the products table (a superset of the index's: a product named that the index does
// not hold is looked for and left out), page by page under row locks, while its lookups answer
// "cannot tell" and its searches go on as before.
import { createHash } from "node:crypto";
import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import type { JsonObject } from "../../catalogs/index.js";
import { attributeFacets, tokenHead } from "../../search/index.js";
import type { FacetStore } from "../../search/index.js";
import { bulkInsert } from "./bulk-insert.js";
import type { Database } from "./connection.js";
import { isDeadlock } from "./errors.js";
import { catalogs, productFacets, products } from "./schema.js";

/** Facet rows per INSERT (about 100 bytes each). */
const INSERT_ROWS = 2000;
/** Products per DELETE of their facets. */
const DELETE_CHUNK = 1000;
/** Facet rows per statement when a catalog's are all removed. */
const DROP_CHUNK = 10_000;
/** Products a backfill transaction writes the facets of, their rows locked meanwhile. */
const BACKFILL_PAGE = 500;
/** Catalogs remembered complete per process (none becomes incomplete again). */
const COMPLETE_KEPT = 100_000;
/**
 * Facet writes: READ COMMITTED, so that their deletes lock only the rows they find, not the gaps
 * between them, where a concurrent write of other products inserts (under MariaDB's default
 * REPEATABLE READ, writes of interleaved products at once deadlocked in the test).
 */
const FACET_WRITES = { isolationLevel: "read committed" } as const;

/** The attributes' `rank` is the product's rank column, not metadata: no facet of it is kept. */
const RANK_HEAD = tokenHead("rank");

type Executor = Pick<Database, "execute" | "delete">;

/** A facet token's key in the table. */
function facetKey(token: string): Buffer {
  return createHash("md5").update(token).digest();
}

/** The facets of a product's metadata as its index attributes hold it (`rank` there is the column's). */
function metadataFacets(metadata: JsonObject): Buffer[] {
  return attributeFacets(metadata)
    .filter((token) => !token.startsWith(RANK_HEAD))
    .map(facetKey);
}

export interface MysqlFacetStoreOptions {
  /** A backfill of a catalog's facets ended: how many products it wrote, or the error that stopped it (tried again at a later lookup). */
  onBackfill?: (catalogId: string, outcome: { products: number } | { error: unknown }) => void;
}

export class MysqlFacetStore implements FacetStore {
  private readonly complete = new Set<string>();
  private readonly backfills = new Map<string, Promise<void>>();

  constructor(
    private readonly db: Database,
    private readonly options: MysqlFacetStoreOptions = {},
  ) {}

  async write(catalogId: string, written: readonly { productId: string; metadata: JsonObject }[]): Promise<void> {
    if (written.length === 0) return;
    await retriedOnDeadlock(() => this.db.transaction((tx) => writeFacets(tx, catalogId, written), FACET_WRITES));
  }

  async remove(catalogId: string, productIds: readonly string[] | undefined): Promise<void> {
    if (productIds === undefined) {
      // A catalog's every facet (millions of rows at 1M products): in statements of their own, so
      // that no transaction holds them all.
      for (;;) {
        const [result] = await this.db.execute(sql`DELETE FROM ${productFacets} WHERE ${eq(productFacets.catalogId, catalogId)} LIMIT ${DROP_CHUNK}`);
        if ((result as { affectedRows: number }).affectedRows < DROP_CHUNK) return;
      }
    }
    if (productIds.length === 0) return;
    await this.db.transaction((tx) => deleteFacets(tx, catalogId, productIds), FACET_WRITES);
  }

  async productsWith(catalogId: string, groups: readonly (readonly string[])[], most: number): Promise<readonly string[] | "too many" | undefined> {
    if (groups.length === 0 || groups.some((g) => g.length === 0 || g.some((token) => token.startsWith(RANK_HEAD)))) return undefined;
    if (!(await this.isComplete(catalogId))) return undefined;
    // Each group read up to one past `most`, at once: the ones read whole narrow each other.
    const lists = await Promise.all(groups.map((group) => this.productsWithAny(catalogId, group, most + 1)));
    const whole = lists.filter((ids) => ids.length <= most).sort((a, b) => a.length - b.length);
    if (whole.length === 0) return "too many";
    let ids = whole[0]!;
    for (const other of whole.slice(1)) {
      const holding = new Set(other);
      ids = ids.filter((id) => holding.has(id));
    }
    return ids;
  }

  /** Resolves once the backfills started so far have ended (tests, an orderly close). */
  async settled(): Promise<void> {
    while (this.backfills.size > 0) await Promise.all(this.backfills.values());
  }

  private async productsWithAny(catalogId: string, tokens: readonly string[], limit: number): Promise<string[]> {
    const keys = [...new Set(tokens)].map(facetKey);
    const rows = await this.db
      .selectDistinct({ productId: productFacets.productId })
      .from(productFacets)
      .where(and(eq(productFacets.catalogId, catalogId), sql`${productFacets.facet} IN (${sql.join(keys.map((k) => sql`${k}`), sql`, `)})`))
      .limit(limit);
    return rows.map((r) => r.productId);
  }

  /** Whether the table holds the facets of every product of the catalog's index; when not, its backfill is started. */
  private async isComplete(catalogId: string): Promise<boolean> {
    if (this.complete.has(catalogId)) return true;
    const rows = await this.db.select({ complete: catalogs.facetsComplete }).from(catalogs).where(eq(catalogs.id, catalogId));
    // An unknown catalog has no products to name.
    if (rows.length === 0) return false;
    if (rows[0]!.complete) {
      if (this.complete.size >= COMPLETE_KEPT) this.complete.clear();
      this.complete.add(catalogId);
      return true;
    }
    if (!this.backfills.has(catalogId)) {
      const backfill = this.backfill(catalogId).then(
        (written) => this.options.onBackfill?.(catalogId, { products: written }),
        (error: unknown) => this.options.onBackfill?.(catalogId, { error }),
      );
      this.backfills.set(
        catalogId,
        backfill.finally(() => this.backfills.delete(catalogId)),
      );
    }
    return false;
  }

  /**
   * Writes the facets of every product of the catalog from its metadata in the products table, a
   * page at a time, each page's product rows locked (FOR UPDATE) while their facets are written, so
   * that a replacement of one of them meanwhile lands before or after. The index sync writes the
   * facets of what it indexes meanwhile; another process backfilling the same catalog at once writes
   * the same rows.
   */
  private async backfill(catalogId: string): Promise<number> {
    let after: string | undefined;
    let written = 0;
    for (;;) {
      const page = await retriedOnDeadlock(() => this.db.transaction(async (tx) => {
        const rows = await tx
          .select({ productId: products.id, metadata: products.metadata })
          .from(products)
          .where(and(eq(products.catalogId, catalogId), after === undefined ? undefined : gt(products.id, after)))
          .orderBy(asc(products.id))
          .limit(BACKFILL_PAGE)
          .for("update");
        await writeFacets(tx, catalogId, rows);
        return rows;
      }, FACET_WRITES));
      written += page.length;
      if (page.length < BACKFILL_PAGE) break;
      after = page[page.length - 1]!.productId;
    }
    await this.db.update(catalogs).set({ facetsComplete: true }).where(eq(catalogs.id, catalogId));
    return written;
  }
}

/** Deadlocks a facet write is tried again after (it is idempotent). */
const DEADLOCK_RETRIES = 3;

/**
 * Runs a facet transaction again when MariaDB chose it as a deadlock's victim: writers of
 * interleaved products (a sync beside a backfill) can still meet on the (catalog, facet) index,
 * whose order is not the products' (about one round in three of the test's eight at once).
 */
async function retriedOnDeadlock<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isDeadlock(error) || attempt >= DEADLOCK_RETRIES) throw error;
    }
  }
}

/** Replaces the facets of these products with those of their metadata, in one order (so concurrent writers lock alike). */
async function writeFacets(tx: Executor, catalogId: string, written: readonly { productId: string; metadata: JsonObject }[]): Promise<void> {
  const sorted = [...written].sort((a, b) => (a.productId < b.productId ? -1 : a.productId > b.productId ? 1 : 0));
  await deleteFacets(
    tx,
    catalogId,
    sorted.map((p) => p.productId),
  );
  const rows: [string, string, Buffer][] = [];
  for (const product of sorted) for (const facet of metadataFacets(product.metadata)) rows.push([catalogId, product.productId, facet]);
  const columns = [productFacets.catalogId, productFacets.productId, productFacets.facet];
  // The delete above left none of these products' rows, and a product's facets are distinct.
  for (let start = 0; start < rows.length; start += INSERT_ROWS) await bulkInsert(tx, productFacets, columns, rows.slice(start, start + INSERT_ROWS));
}

async function deleteFacets(tx: Executor, catalogId: string, productIds: readonly string[]): Promise<void> {
  for (let start = 0; start < productIds.length; start += DELETE_CHUNK) {
    await tx.delete(productFacets).where(and(eq(productFacets.catalogId, catalogId), inArray(productFacets.productId, productIds.slice(start, start + DELETE_CHUNK))));
  }
}
