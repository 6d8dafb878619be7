import type { CatalogRecord, NewProduct, Product, ProductStatus, Rank, StatusCounts, TextImageMapStatus } from "./model.js";

/**
 * Persistence the catalog core needs. Catalog lookups only ever see active (not soft-deleted)
 * catalogs of the given organization: that is where tenant isolation is enforced.
 */
export interface CatalogRepository {
  /** "name_taken" when an active catalog of the organization already has the name. */
  create(catalog: CatalogRecord): Promise<"created" | "name_taken">;
  findActive(organizationId: string, catalogId: string): Promise<CatalogRecord | undefined>;
  listActive(organizationId: string): Promise<CatalogRecord[]>;
  update(
    organizationId: string,
    catalogId: string,
    changes: { name?: string; description?: string },
    now: Date,
  ): Promise<"updated" | "not_found" | "name_taken">;
  /** False when there was no such active catalog. */
  softDelete(organizationId: string, catalogId: string, now: Date): Promise<boolean>;
  /** The state of the catalog's text-to-image map, for progress. */
  textImageMap(catalogId: string): Promise<TextImageMapStatus>;
}

export interface ProductQuery {
  page: number;
  pageSize: number;
  /** Lowercase substring of descriptor, URLs or metadata. */
  search: string | undefined;
  rank: Rank | undefined;
  status: ProductStatus | undefined;
  createdAfter: Date | undefined;
  createdBefore: Date | undefined;
}

export interface ProductRepository {
  /** Inserts the products, replacing any with the same id, all or nothing. */
  upsertBatch(catalogId: string, products: NewProduct[], now: Date): Promise<void>;
  list(catalogId: string, query: ProductQuery): Promise<{ items: Product[]; total: number }>;
  get(catalogId: string, productId: string): Promise<Product | undefined>;
  /** Deletes the listed products, or every product when ids is undefined; returns how many went. */
  delete(catalogId: string, ids: string[] | undefined): Promise<number>;
  /** False when the product does not exist. */
  setRank(catalogId: string, productId: string, rank: Rank, now: Date): Promise<boolean>;
  countByStatus(catalogIds: string[]): Promise<Map<string, StatusCounts>>;
}
