import { and, count, eq, sql } from "drizzle-orm";
import type { TextImageMap, TextImageSample } from "../../embeddings/index.js";
import type { TextImageMapStore } from "../../processing/index.js";
import type { Pool } from "mysql2/promise";
import type { Database } from "./connection.js";
import { catalogTextMaps, productEmbeddings, products } from "./schema.js";
import { bytesToVector } from "./vectors.js";

export class MysqlTextImageMapStore implements TextImageMapStore {
  constructor(
    private readonly db: Database,
    /** Named locks belong to one connection, so they need the pool itself. */
    private readonly pool: Pool,
  ) {}

  async current(catalogId: string): Promise<{ modelVersion: string; trainedOn: number } | undefined> {
    const rows = await this.db
      .select({ modelVersion: catalogTextMaps.modelVersion, trainedOn: catalogTextMaps.trainedOn })
      .from(catalogTextMaps)
      .where(eq(catalogTextMaps.catalogId, catalogId));
    return rows[0];
  }

  async countSamples(catalogId: string, modelVersion: string): Promise<number> {
    const rows = await this.db.select({ n: count() }).from(productEmbeddings).where(this.samplesOf(catalogId, modelVersion));
    return rows[0]?.n ?? 0;
  }

  async samples(catalogId: string, modelVersion: string): Promise<TextImageSample[]> {
    const rows = await this.db
      .select({ image: productEmbeddings.image, colour: productEmbeddings.colour, text: productEmbeddings.text })
      .from(productEmbeddings)
      .where(this.samplesOf(catalogId, modelVersion));
    return rows.map((r) => ({ image: bytesToVector(r.image), colour: bytesToVector(r.colour), text: bytesToVector(r.text) }));
  }

  async save(catalogId: string, modelVersion: string, map: TextImageMap): Promise<void> {
    const row = { modelVersion, trainedOn: map.trainedOn, map: map.toBytes(), updatedAt: sql`UTC_TIMESTAMP(3)` };
    await this.db.insert(catalogTextMaps).values({ catalogId, ...row, updatedAt: new Date() }).onDuplicateKeyUpdate({ set: row });
  }

  async exclusively(catalogId: string, work: () => Promise<void>): Promise<void> {
    // A named lock held by one connection: a second worker skips rather than fitting twice.
    const name = `vitrine_map_${catalogId}`;
    const connection = await this.pool.getConnection();
    try {
      const [rows] = await connection.query("SELECT GET_LOCK(?, 0) AS got", [name]);
      if ((rows as { got: number }[])[0]?.got !== 1) return;
      try {
        await work();
      } finally {
        await connection.query("SELECT RELEASE_LOCK(?)", [name]);
      }
    } finally {
      connection.release();
    }
  }

  private samplesOf(catalogId: string, modelVersion: string) {
    return and(
      eq(productEmbeddings.catalogId, catalogId),
      eq(productEmbeddings.modelVersion, modelVersion),
      sql`EXISTS (SELECT 1 FROM ${products} WHERE ${products.catalogId} = ${productEmbeddings.catalogId} AND ${products.id} = ${productEmbeddings.productId} AND ${products.status} = 'PROCESSED')`,
    );
  }
}
