import { and, eq, isNull } from "drizzle-orm";
import type { ProductEmbeddings, SearchSource, StoredMap } from "../../search/index.js";
import type { Database } from "./connection.js";
import { storedMap } from "./index-source.js";
import { catalogs, catalogTextMaps, productEmbeddings, products } from "./schema.js";
import { bytesToVector } from "../fp32.js";

export class MysqlSearchSource implements SearchSource {
  constructor(private readonly db: Database) {}

  async target(organizationId: string, catalogId: string): Promise<{ map: StoredMap | undefined } | undefined> {
    const rows = await this.db
      .select({ modelVersion: catalogTextMaps.modelVersion, trainedOn: catalogTextMaps.trainedOn, updatedAt: catalogTextMaps.updatedAt })
      .from(catalogs)
      .leftJoin(catalogTextMaps, eq(catalogTextMaps.catalogId, catalogs.id))
      .where(and(eq(catalogs.id, catalogId), eq(catalogs.organizationId, organizationId), isNull(catalogs.deletedAt)));
    const row = rows[0];
    return row ? { map: storedMap(this.db, catalogId, row) } : undefined;
  }

  async subject(catalogId: string, productId: string): Promise<{ status: string; embeddings: ProductEmbeddings | undefined } | undefined> {
    const rows = await this.db
      .select({ status: products.status, image: productEmbeddings.image, colour: productEmbeddings.colour, text: productEmbeddings.text })
      .from(products)
      .leftJoin(productEmbeddings, and(eq(productEmbeddings.catalogId, products.catalogId), eq(productEmbeddings.productId, products.id)))
      .where(and(eq(products.catalogId, catalogId), eq(products.id, productId)));
    const row = rows[0];
    if (!row) return undefined;
    const embeddings =
      row.image && row.colour && row.text
        ? { image: bytesToVector(row.image), colour: bytesToVector(row.colour), text: bytesToVector(row.text) }
        : undefined;
    return { status: row.status, embeddings };
  }
}
