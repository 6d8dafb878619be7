import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { CatalogRecord, CatalogRepository, TextImageMapStatus } from "../../catalogs/index.js";
import type { Database } from "./connection.js";
import { isDuplicateKey } from "./errors.js";
import { catalogs, catalogTextMapFailures, catalogTextMaps } from "./schema.js";

const columns = {
  id: catalogs.id,
  organizationId: catalogs.organizationId,
  name: catalogs.name,
  description: catalogs.description,
  createdAt: catalogs.createdAt,
  updatedAt: catalogs.updatedAt,
};

export class MysqlCatalogRepository implements CatalogRepository {
  constructor(private readonly db: Database) {}

  async create(catalog: CatalogRecord): Promise<"created" | "name_taken"> {
    try {
      await this.db.insert(catalogs).values(catalog);
      return "created";
    } catch (error) {
      if (isDuplicateKey(error)) return "name_taken";
      throw error;
    }
  }

  async findActive(organizationId: string, catalogId: string): Promise<CatalogRecord | undefined> {
    const rows = await this.db
      .select(columns)
      .from(catalogs)
      .where(and(eq(catalogs.id, catalogId), eq(catalogs.organizationId, organizationId), isNull(catalogs.deletedAt)));
    return rows[0];
  }

  listActive(organizationId: string): Promise<CatalogRecord[]> {
    return this.db
      .select(columns)
      .from(catalogs)
      .where(and(eq(catalogs.organizationId, organizationId), isNull(catalogs.deletedAt)))
      .orderBy(asc(catalogs.createdAt), asc(catalogs.id));
  }

  async update(
    organizationId: string,
    catalogId: string,
    changes: { name?: string; description?: string },
    now: Date,
  ): Promise<"updated" | "not_found" | "name_taken"> {
    try {
      const [result] = await this.db
        .update(catalogs)
        .set({ ...changes, updatedAt: now })
        .where(and(eq(catalogs.id, catalogId), eq(catalogs.organizationId, organizationId), isNull(catalogs.deletedAt)));
      return result.affectedRows > 0 ? "updated" : "not_found";
    } catch (error) {
      if (isDuplicateKey(error)) return "name_taken";
      throw error;
    }
  }

  async softDelete(organizationId: string, catalogId: string, now: Date): Promise<boolean> {
    const [result] = await this.db
      .update(catalogs)
      .set({ deletedAt: now, updatedAt: now, deletionMarker: sql`${catalogs.id}` })
      .where(and(eq(catalogs.id, catalogId), eq(catalogs.organizationId, organizationId), isNull(catalogs.deletedAt)));
    return result.affectedRows > 0;
  }

  async textImageMap(catalogId: string): Promise<TextImageMapStatus> {
    const [[map], [failure]] = await Promise.all([
      this.db.select({ trainedOn: catalogTextMaps.trainedOn, updatedAt: catalogTextMaps.updatedAt }).from(catalogTextMaps).where(eq(catalogTextMaps.catalogId, catalogId)),
      this.db
        .select({ reason: catalogTextMapFailures.reason, retryAt: catalogTextMapFailures.retryAt })
        .from(catalogTextMapFailures)
        .where(eq(catalogTextMapFailures.catalogId, catalogId)),
    ]);
    return { trainedOn: map?.trainedOn ?? 0, fittedAt: map?.updatedAt, lastFailure: failure?.reason, nextAttemptAt: failure?.retryAt };
  }
}
