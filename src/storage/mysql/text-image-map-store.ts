import { and, asc, eq, inArray, ne, sql } from "drizzle-orm";
import type { TextImageMap, TextImageSample } from "../../embeddings/index.js";
import type { StoredMapState, TextImageMapStore } from "../../processing/index.js";
import type { Pool } from "mysql2/promise";
import type { Database } from "./connection.js";
import { catalogTextMapChunks, catalogTextMapFailures, catalogTextMaps, productEmbeddings, products } from "./schema.js";
import { bytesToVector } from "../fp32.js";
import { withNamedLock } from "./named-lock.js";

/**
 * Bytes per chunk row. A statement then stays near 1 MB even hex-escaped by a text-protocol
 * client: far inside MySQL 5.7's 4 MB max_allowed_packet, the smallest default in use.
 */
export const MAP_CHUNK_BYTES = 512 * 1024;
/** Products whose embeddings one statement reads while sampling (about 5.6 KB each). */
const SAMPLE_PAGE = 500;

export class MysqlTextImageMapStore implements TextImageMapStore {
  constructor(
    private readonly db: Database,
    /** Named locks belong to one connection, so they need the pool itself. */
    private readonly pool: Pool,
  ) {}

  async current(catalogId: string): Promise<StoredMapState | undefined> {
    const rows = await this.db
      .select({ modelVersion: catalogTextMaps.modelVersion, trainedOn: catalogTextMaps.trainedOn, describedAtFit: catalogTextMaps.describedAtFit })
      .from(catalogTextMaps)
      .where(eq(catalogTextMaps.catalogId, catalogId));
    return rows[0];
  }

  async importing(catalogId: string): Promise<boolean> {
    const [rows] = (await this.db.execute(sql`
      SELECT 1 AS waiting FROM ${products} FORCE INDEX (products_catalog_status)
      WHERE catalog_id = ${catalogId} AND status = 'PROCESSING' LIMIT 1`)) as unknown as [unknown[]];
    return rows.length > 0;
  }

  async countDescribed(catalogId: string, modelVersion: string): Promise<number> {
    // It runs after every batch, so the index alone must answer it. Left to itself the optimizer
    // takes the primary key and reads every row with its vectors: 2 s at 20k products in a 100k
    // import, against 50 ms. Products re-queued or in ERROR still count; the sample itself takes
    // processed products only.
    const [rows] = (await this.db.execute(sql`
      SELECT COUNT(*) AS n FROM ${productEmbeddings} FORCE INDEX (product_embeddings_described)
      WHERE catalog_id = ${catalogId} AND model_version = ${modelVersion} AND described = 1`)) as unknown as [{ n: number | string }[]];
    return Number(rows[0]?.n ?? 0);
  }

  async samples(catalogId: string, modelVersion: string, limit: number): Promise<TextImageSample[]> {
    // Ids first, ordered by a hash, so that the sample is spread over the whole catalog and the
    // same catalog gives the same sample; then the vectors of the chosen ones, a page at a time.
    // Through the described index, which holds the ids: the rows (and their vectors) are read only
    // for the chosen ones.
    const [chosen] = (await this.db.execute(sql`
      SELECT e.product_id AS productId FROM ${productEmbeddings} e FORCE INDEX (product_embeddings_described)
      WHERE e.catalog_id = ${catalogId} AND e.model_version = ${modelVersion} AND e.described = 1
        AND EXISTS (SELECT 1 FROM ${products} p WHERE p.catalog_id = e.catalog_id AND p.id = e.product_id AND p.status = 'PROCESSED')
      ORDER BY CRC32(e.product_id), e.product_id
      LIMIT ${limit}`)) as unknown as [{ productId: string }[]];
    const samples: TextImageSample[] = [];
    for (let i = 0; i < chosen.length; i += SAMPLE_PAGE) {
      const ids = chosen.slice(i, i + SAMPLE_PAGE).map((r) => r.productId);
      // The descriptor too: its words get prototypes in the map (embeddings/word-prototypes.ts).
      const rows = await this.db
        .select({ image: productEmbeddings.image, colour: productEmbeddings.colour, text: productEmbeddings.text, descriptor: products.descriptor })
        .from(productEmbeddings)
        .innerJoin(products, and(eq(products.catalogId, productEmbeddings.catalogId), eq(products.id, productEmbeddings.productId)))
        .where(and(eq(productEmbeddings.catalogId, catalogId), inArray(productEmbeddings.productId, ids)));
      for (const r of rows) {
        samples.push({ image: bytesToVector(r.image), colour: bytesToVector(r.colour), text: bytesToVector(r.text), descriptor: r.descriptor });
      }
    }
    return samples;
  }

  async save(catalogId: string, modelVersion: string, map: TextImageMap, describedAtFit: number): Promise<number> {
    const bytes = map.toBytes();
    await this.db.transaction(async (tx) => {
      const [row] = await tx.select({ generation: catalogTextMaps.generation }).from(catalogTextMaps).where(eq(catalogTextMaps.catalogId, catalogId)).for("update");
      const generation = (row?.generation ?? 0) + 1;
      // One statement per chunk: each stays far below any server's packet limit.
      for (let seq = 0, offset = 0; offset < bytes.length; seq++, offset += MAP_CHUNK_BYTES) {
        await tx.insert(catalogTextMapChunks).values({ catalogId, generation, seq, bytes: bytes.subarray(offset, offset + MAP_CHUNK_BYTES) });
      }
      const fields = { modelVersion, trainedOn: map.trainedOn, describedAtFit, map: null, generation, bytes: bytes.length, updatedAt: sql`UTC_TIMESTAMP(3)` };
      await tx.insert(catalogTextMaps).values({ catalogId, ...fields, updatedAt: new Date() }).onDuplicateKeyUpdate({ set: fields });
      await tx.delete(catalogTextMapChunks).where(and(eq(catalogTextMapChunks.catalogId, catalogId), ne(catalogTextMapChunks.generation, generation)));
      await tx.delete(catalogTextMapFailures).where(eq(catalogTextMapFailures.catalogId, catalogId));
    });
    return bytes.length;
  }

  async failure(catalogId: string): Promise<{ failures: number; retryAt: Date } | undefined> {
    const rows = await this.db
      .select({ failures: catalogTextMapFailures.failures, retryAt: catalogTextMapFailures.retryAt })
      .from(catalogTextMapFailures)
      .where(eq(catalogTextMapFailures.catalogId, catalogId));
    return rows[0];
  }

  async recordFailure(catalogId: string, reason: string, failures: number, retryAt: Date): Promise<void> {
    const fields = { failures, reason: reason.slice(0, 300), failedAt: new Date(), retryAt };
    await this.db.insert(catalogTextMapFailures).values({ catalogId, ...fields }).onDuplicateKeyUpdate({ set: fields });
  }

  async exclusively(catalogId: string, work: () => Promise<void>): Promise<void> {
    // Not waited for: a second worker skips rather than fitting twice.
    await withNamedLock(this.pool, `vitrine_map_${catalogId}`, 0, work);
  }
}

/** The stored bytes of a catalog's map: its chunks in order, or the single value of a map saved before chunks. */
export async function readMapBytes(db: Database, catalogId: string): Promise<Buffer | undefined> {
  const [row] = await db
    .select({ generation: catalogTextMaps.generation, map: catalogTextMaps.map })
    .from(catalogTextMaps)
    .where(eq(catalogTextMaps.catalogId, catalogId));
  if (!row) return undefined;
  if (row.generation === null) return row.map ?? undefined;
  const chunks = await db
    .select({ bytes: catalogTextMapChunks.bytes })
    .from(catalogTextMapChunks)
    .where(and(eq(catalogTextMapChunks.catalogId, catalogId), eq(catalogTextMapChunks.generation, row.generation)))
    .orderBy(asc(catalogTextMapChunks.seq));
  return Buffer.concat(chunks.map((c) => c.bytes));
}
