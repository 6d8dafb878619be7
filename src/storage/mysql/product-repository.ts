import { and, asc, count, desc, eq, gt, inArray, lt, or, sql } from "drizzle-orm";
import type { SQL } from "drizzle-orm";
import type {
  NewProduct,
  Product,
  ProductQuery,
  ProductRepository,
  Rank,
  StatusCounts,
} from "../../catalogs/index.js";
import { emptyStatusCounts } from "../../catalogs/index.js";
import type { MySqlColumn } from "drizzle-orm/mysql-core";
import type { SqlValue } from "mysql2";
import { bulkInsert, quoted } from "./bulk-insert.js";
import type { Database } from "./connection.js";
import { queueCatalogForIndex, queueForIndex } from "./index-queue.js";
import { productEmbeddings, products } from "./schema.js";

/** The columns of a Product; the queue's bookkeeping columns stay inside storage. */
const productColumns = {
  catalogId: products.catalogId,
  id: products.id,
  imageUrl: products.imageUrl,
  objectKey: products.objectKey,
  descriptor: products.descriptor,
  metadata: products.metadata,
  status: products.status,
  rank: products.rank,
  errorReason: sql<string | null>`IF(${products.status} = 'ERROR', ${products.errorReason}, NULL)`,
  createdAt: products.createdAt,
  updatedAt: products.updatedAt,
};

/** Each column a new or replaced product is written with, and its value (upsertBatch). */
const UPSERT_FIELDS: readonly [MySqlColumn, (p: NewProduct, at: { catalogId: string; now: Date }) => SqlValue][] = [
  [products.catalogId, (_, at) => at.catalogId],
  [products.id, (p) => p.id],
  [products.imageUrl, (p) => p.imageUrl],
  [products.descriptor, (p) => p.descriptor],
  [products.metadata, (p) => JSON.stringify(p.metadata)],
  [products.status, () => "PROCESSING"],
  [products.createdAt, (_, at) => at.now],
  [products.updatedAt, (_, at) => at.now],
];
const UPSERT_COLUMNS = UPSERT_FIELDS.map(([column]) => column);

/**
 * A replaced product keeps its creation time and rank, and goes back into the queue as a new
 * generation, so a worker still busy with the old one cannot overwrite it.
 */
const ON_REPLACE = [
  ...[products.imageUrl, products.descriptor, products.metadata, products.status, products.updatedAt].map((c) => `${quoted(c)} = VALUES(${quoted(c)})`),
  `${quoted(products.generation)} = ${quoted(products.generation)} + 1`,
  `${quoted(products.attempts)} = 0`,
  ...[products.leaseOwner, products.leaseExpiresAt, products.nextAttemptAt, products.errorReason].map((c) => `${quoted(c)} = NULL`),
].join(", ");

/** Rows per INSERT: keeps a statement of maximal metadata well under max_allowed_packet. */
const INSERT_CHUNK = 200;
const DELETE_CHUNK = 1000;

export class MysqlProductRepository implements ProductRepository {
  constructor(private readonly db: Database) {}

  async upsertBatch(catalogId: string, batch: NewProduct[], now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (let start = 0; start < batch.length; start += INSERT_CHUNK) {
        const rows = batch.slice(start, start + INSERT_CHUNK).map((p) => UPSERT_FIELDS.map(([, value]) => value(p, { catalogId, now })));
        await bulkInsert(tx, products, UPSERT_COLUMNS, rows, ON_REPLACE);
      }
      // A replaced product is PROCESSING again, so it leaves the search index until reprocessed.
      await queueForIndex(tx, catalogId, batch.map((p) => p.id));
    });
  }

  async list(catalogId: string, query: ProductQuery): Promise<{ items: Product[]; total: number }> {
    const where = and(eq(products.catalogId, catalogId), ...filtersOf(query));
    const [totals, items] = await Promise.all([
      this.db.select({ total: count() }).from(products).where(where),
      this.db
        .select(productColumns)
        .from(products)
        .where(where)
        .orderBy(desc(products.createdAt), asc(products.id))
        .limit(query.pageSize)
        .offset((query.page - 1) * query.pageSize),
    ]);
    return { items, total: totals[0]?.total ?? 0 };
  }

  async get(catalogId: string, productId: string): Promise<Product | undefined> {
    const rows = await this.db
      .select(productColumns)
      .from(products)
      .where(and(eq(products.catalogId, catalogId), eq(products.id, productId)));
    return rows[0];
  }

  async delete(catalogId: string, ids: string[] | undefined): Promise<number> {
    return this.db.transaction(async (tx) => {
      if (ids === undefined) {
        await queueCatalogForIndex(tx, catalogId);
        await tx.delete(productEmbeddings).where(eq(productEmbeddings.catalogId, catalogId));
        const [result] = await tx.delete(products).where(eq(products.catalogId, catalogId));
        return result.affectedRows;
      }
      let deleted = 0;
      for (let start = 0; start < ids.length; start += DELETE_CHUNK) {
        const chunk = ids.slice(start, start + DELETE_CHUNK);
        await queueForIndex(tx, catalogId, chunk);
        await tx
          .delete(productEmbeddings)
          .where(and(eq(productEmbeddings.catalogId, catalogId), inArray(productEmbeddings.productId, chunk)));
        const [result] = await tx.delete(products).where(and(eq(products.catalogId, catalogId), inArray(products.id, chunk)));
        deleted += result.affectedRows;
      }
      return deleted;
    });
  }

  async setRank(catalogId: string, productId: string, rank: Rank, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [result] = await tx
        .update(products)
        .set({ rank, updatedAt: now })
        .where(and(eq(products.catalogId, catalogId), eq(products.id, productId)));
      if (result.affectedRows === 0) return false;
      await queueForIndex(tx, catalogId, [productId]);
      return true;
    });
  }

  async countByStatus(catalogIds: string[]): Promise<Map<string, StatusCounts>> {
    const counts = new Map<string, StatusCounts>();
    if (catalogIds.length === 0) return counts;
    const rows = await this.db
      .select({ catalogId: products.catalogId, status: products.status, n: count() })
      .from(products)
      .where(inArray(products.catalogId, catalogIds))
      .groupBy(products.catalogId, products.status);
    for (const row of rows) {
      const entry = counts.get(row.catalogId) ?? emptyStatusCounts();
      entry[row.status] = row.n;
      counts.set(row.catalogId, entry);
    }
    return counts;
  }
}

function filtersOf(query: ProductQuery): SQL[] {
  const filters: SQL[] = [];
  if (query.rank) filters.push(eq(products.rank, query.rank));
  if (query.status) filters.push(eq(products.status, query.status));
  if (query.createdAfter) filters.push(gt(products.createdAt, query.createdAfter));
  if (query.createdBefore) filters.push(lt(products.createdAt, query.createdBefore));
  if (query.search) {
    const pattern = `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    // Metadata is matched on its values ($.*), not its key names.
    filters.push(
      or(
        sql`${products.descriptor} LIKE ${pattern}`,
        sql`LOWER(${products.imageUrl}) LIKE ${pattern}`,
        sql`LOWER(${products.objectKey}) LIKE ${pattern}`,
        sql`LOWER(JSON_EXTRACT(${products.metadata}, '$.*')) LIKE ${pattern}`,
      )!,
    );
  }
  return filters;
}
