import { and, asc, count, eq, gt, inArray, isNull, sql } from "drizzle-orm";
import type { Pool } from "mysql2/promise";
import type { IndexableProduct, IndexSource, QueuedChange } from "../../search/index.js";
import type { StoredMap } from "../../search/index.js";
import type { Database } from "./connection.js";
import { catalogs, catalogTextMaps, indexQueue, productEmbeddings, products } from "./schema.js";
import { bytesToVector } from "../fp32.js";
import { withNamedLock } from "./named-lock.js";
import { readMapBytes } from "./text-image-map-store.js";

const indexableColumns = {
  productId: products.id,
  rank: products.rank,
  metadata: products.metadata,
  descriptor: products.descriptor,
  image: productEmbeddings.image,
  colour: productEmbeddings.colour,
  text: productEmbeddings.text,
};

type IndexableRow = { productId: string; rank: IndexableProduct["rank"]; metadata: IndexableProduct["metadata"]; descriptor: string; image: Buffer; colour: Buffer; text: Buffer };

export class MysqlIndexSource implements IndexSource {
  constructor(
    private readonly db: Database,
    /** Named locks belong to one connection, so they need the pool itself. */
    private readonly pool: Pool,
  ) {}

  async catalog(catalogId: string): Promise<{ map: StoredMap | undefined } | undefined> {
    const rows = await this.db
      .select({ id: catalogs.id, modelVersion: catalogTextMaps.modelVersion, trainedOn: catalogTextMaps.trainedOn, updatedAt: catalogTextMaps.updatedAt })
      .from(catalogs)
      .leftJoin(catalogTextMaps, eq(catalogTextMaps.catalogId, catalogs.id))
      .where(and(eq(catalogs.id, catalogId), isNull(catalogs.deletedAt)));
    const row = rows[0];
    if (!row) return undefined;
    return { map: storedMap(this.db, catalogId, row) };
  }

  async inactive(catalogIds: readonly string[]): Promise<string[]> {
    if (catalogIds.length === 0) return [];
    const active = await this.db
      .select({ id: catalogs.id })
      .from(catalogs)
      .where(and(inArray(catalogs.id, [...catalogIds]), isNull(catalogs.deletedAt)));
    const activeIds = new Set(active.map((r) => r.id));
    return catalogIds.filter((id) => !activeIds.has(id));
  }

  async pending(catalogId: string, limit: number): Promise<QueuedChange[]> {
    return this.db
      .select({ productId: indexQueue.productId, version: indexQueue.version })
      .from(indexQueue)
      .where(eq(indexQueue.catalogId, catalogId))
      .orderBy(asc(indexQueue.productId))
      .limit(limit);
  }

  async catalogsWithPending(limit: number): Promise<string[]> {
    const rows = await this.db.selectDistinct({ catalogId: indexQueue.catalogId }).from(indexQueue).limit(limit);
    return rows.map((r) => r.catalogId);
  }

  async acknowledge(catalogId: string, changes: readonly QueuedChange[]): Promise<void> {
    if (changes.length === 0) return;
    await this.db
      .delete(indexQueue)
      .where(
        and(
          eq(indexQueue.catalogId, catalogId),
          inArray(sql`(${indexQueue.productId}, ${indexQueue.version})`, changes.map((c) => sql`(${c.productId}, ${c.version})`)),
        ),
      );
  }

  async dropPending(catalogId: string): Promise<void> {
    await this.db.delete(indexQueue).where(eq(indexQueue.catalogId, catalogId));
  }

  async indexable(catalogId: string, productIds: readonly string[]): Promise<IndexableProduct[]> {
    if (productIds.length === 0) return [];
    const rows = await this.indexableQuery(catalogId).where(
      and(eq(products.catalogId, catalogId), eq(products.status, "PROCESSED"), inArray(products.id, [...productIds])),
    );
    return rows.map(toIndexable);
  }

  async indexableCount(catalogId: string): Promise<number> {
    const rows = await this.db
      .select({ n: count() })
      .from(products)
      .innerJoin(productEmbeddings, and(eq(productEmbeddings.catalogId, catalogId), eq(productEmbeddings.productId, products.id)))
      .where(and(eq(products.catalogId, catalogId), eq(products.status, "PROCESSED")));
    return rows[0]?.n ?? 0;
  }

  async indexablePage(catalogId: string, afterProductId: string | undefined, limit: number): Promise<IndexableProduct[]> {
    const rows = await this.indexableQuery(catalogId)
      .where(
        and(
          eq(products.catalogId, catalogId),
          eq(products.status, "PROCESSED"),
          afterProductId === undefined ? undefined : gt(products.id, afterProductId),
        ),
      )
      .orderBy(asc(products.id))
      .limit(limit);
    return rows.map(toIndexable);
  }

  async exclusively<T>(catalogId: string, waitMs: number, work: () => Promise<T>): Promise<T | undefined> {
    return withNamedLock(this.pool, `vitrine_index_${catalogId}`, waitMs, work);
  }

  private indexableQuery(catalogId: string) {
    return this.db
      .select(indexableColumns)
      .from(products)
      .innerJoin(productEmbeddings, and(eq(productEmbeddings.catalogId, catalogId), eq(productEmbeddings.productId, products.id)))
      .$dynamic();
  }
}

function toIndexable(row: IndexableRow): IndexableProduct {
  return {
    productId: row.productId,
    rank: row.rank,
    metadata: row.metadata,
    descriptor: row.descriptor,
    embeddings: { image: bytesToVector(row.image), colour: bytesToVector(row.colour), text: bytesToVector(row.text) },
  };
}

/** The catalog's map as search and indexing see it: an identity now, the weights when asked. */
export function storedMap(
  db: Database,
  catalogId: string,
  row: { modelVersion: string | null; trainedOn: number | null; updatedAt: Date | null },
): StoredMap | undefined {
  if (row.modelVersion === null || row.updatedAt === null) return undefined;
  return {
    identity: `${row.modelVersion}#${row.trainedOn}@${row.updatedAt.toISOString()}`,
    async bytes() {
      const bytes = await readMapBytes(db, catalogId);
      if (!bytes) throw new Error(`the text-image map of catalog ${catalogId} disappeared`);
      return bytes;
    },
  };
}
