export const PRODUCT_STATUSES = ["PROCESSING", "PROCESSED", "ERROR"] as const;
export type ProductStatus = (typeof PRODUCT_STATUSES)[number];

export const RANKS = ["NO_BOOST", "BOOST", "SUPER_BOOST"] as const;
export type Rank = (typeof RANKS)[number];

export type CatalogStatus = "EMPTY" | "PROCESSING" | "WARNING" | "ERROR" | "PROCESSED";

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface CatalogRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  createdAt: Date;
  updatedAt: Date;
}

export type StatusCounts = Record<ProductStatus, number>;

/** A catalog's text-to-image map as progress shows it. */
export interface TextImageMapStatus {
  /** 0 while the catalog has no map. */
  trainedOn: number;
  fittedAt: Date | undefined;
  /** Set while the last fit failed. */
  lastFailure: string | undefined;
  nextAttemptAt: Date | undefined;
}

export interface Catalog extends CatalogRecord {
  productCount: number;
  status: CatalogStatus;
}

export interface Product {
  catalogId: string;
  id: string;
  imageUrl: string;
  /** Key of the service's copy of the image, once fetched. */
  objectKey: string | null;
  descriptor: string;
  metadata: JsonObject;
  status: ProductStatus;
  rank: Rank;
  /** Why the product is in ERROR; null otherwise. */
  errorReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A validated product as written by Create Products. */
export interface NewProduct {
  id: string;
  imageUrl: string;
  descriptor: string;
  metadata: JsonObject;
}

export const emptyStatusCounts = (): StatusCounts => ({ PROCESSING: 0, PROCESSED: 0, ERROR: 0 });

export function productCount(counts: StatusCounts): number {
  return counts.PROCESSING + counts.PROCESSED + counts.ERROR;
}

/** The catalog status rule: any product in flight wins, then failures, then success. */
export function catalogStatus(counts: StatusCounts): CatalogStatus {
  const total = productCount(counts);
  if (total === 0) return "EMPTY";
  if (counts.PROCESSING > 0) return "PROCESSING";
  if (counts.ERROR === total) return "ERROR";
  if (counts.ERROR > 0) return "WARNING";
  return "PROCESSED";
}
