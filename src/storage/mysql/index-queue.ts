import { eq, sql } from "drizzle-orm";
import type { SQL } from "drizzle-orm";
import { bulkInsert, quoted } from "./bulk-insert.js";
import type { Executor } from "./connection.js";
import { indexQueue, products } from "./schema.js";

const CHUNK = 1000;

/** Records that these products' index entries must be brought in line with MySQL. */
export async function queueForIndex(tx: Executor, catalogId: string, productIds: readonly string[]): Promise<void> {
  // Sorted, so concurrent transactions lock queue rows in one order and cannot deadlock on them.
  const ids = [...new Set(productIds)].sort();
  for (let start = 0; start < ids.length; start += CHUNK) {
    const rows = ids.slice(start, start + CHUNK).map((productId) => [catalogId, productId]);
    await bulkInsert(tx, indexQueue, [indexQueue.catalogId, indexQueue.productId], rows, `${quoted(indexQueue.version)} = ${quoted(indexQueue.version)} + 1`);
  }
}

/** Queues every product of the catalog (before they are all deleted). */
export async function queueCatalogForIndex(tx: Executor, catalogId: string): Promise<void> {
  await queueSelectedForIndex(tx, sql`SELECT ${products.catalogId}, ${products.id} FROM ${products} WHERE ${eq(products.catalogId, catalogId)} ORDER BY ${products.id}`);
}

/**
 * Queues the products a `SELECT catalog_id, product_id ...` picks, in the statement's order (sort
 * it by key, as queueForIndex does, so concurrent transactions take queue rows in one order).
 */
export async function queueSelectedForIndex(tx: Executor, selection: SQL): Promise<void> {
  await tx.execute(sql`
    INSERT INTO ${indexQueue} (${sql.raw("catalog_id")}, ${sql.raw("product_id")})
    ${selection}
    ON DUPLICATE KEY UPDATE ${sql.raw("version")} = ${sql.raw("version")} + 1`);
}
