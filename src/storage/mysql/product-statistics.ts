import { count, eq, isNull } from "drizzle-orm";
import { PRODUCT_STATUSES } from "../../catalogs/index.js";
import type { Database } from "./index.js";
import { catalogs, products } from "./schema.js";

/**
 * Products of active catalogs by status, every status present (0 when none). One GROUP BY over the
 * active catalogs, each read through the (catalog_id, status) index alone: without the hint MariaDB
 * walks the primary key and reads every row (5x slower on 100,000 products). Products of deleted
 * catalogs are left out, as the workers leave them.
 */
export async function countProductsByStatus(db: Database): Promise<Record<string, number>> {
  const rows = await db
    .select({ status: products.status, n: count() })
    .from(catalogs)
    .innerJoin(products, eq(products.catalogId, catalogs.id), { useIndex: ["products_catalog_status"] })
    .where(isNull(catalogs.deletedAt))
    .groupBy(products.status);
  const counts: Record<string, number> = Object.fromEntries(PRODUCT_STATUSES.map((status) => [status, 0]));
  for (const row of rows) counts[row.status] = Number(row.n);
  return counts;
}
