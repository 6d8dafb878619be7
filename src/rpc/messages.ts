import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ApiKeyView } from "../auth/index.js";
import type { Catalog, CatalogStatus, Product, ProductStatus, Rank } from "../catalogs/index.js";
import { ApiKeySchema } from "../gen/vitrine/v1/api_key_service_pb.js";
import type { ApiKey } from "../gen/vitrine/v1/api_key_service_pb.js";
import { Catalog_Status, CatalogSchema } from "../gen/vitrine/v1/catalog_service_pb.js";
import type { Catalog as CatalogMessage } from "../gen/vitrine/v1/catalog_service_pb.js";
import { Rank as RankEnum } from "../gen/vitrine/v1/common_pb.js";
import { Product_Status, ProductSchema } from "../gen/vitrine/v1/product_service_pb.js";
import type { Product as ProductMessage } from "../gen/vitrine/v1/product_service_pb.js";

/** Which optional Catalog fields an operation returns (the interface fixes them per operation). */
export interface CatalogFields {
  updatedAt?: boolean;
  status?: boolean;
}

export function catalogMessage(catalog: Catalog, fields: CatalogFields = {}): CatalogMessage {
  return create(CatalogSchema, {
    id: catalog.id,
    name: catalog.name,
    description: catalog.description,
    organizationId: catalog.organizationId,
    productCount: catalog.productCount,
    createdAt: timestampFromDate(catalog.createdAt),
    updatedAt: fields.updatedAt ? timestampFromDate(catalog.updatedAt) : undefined,
    status: fields.status ? Catalog_Status[catalog.status satisfies CatalogStatus] : undefined,
  });
}

/** objectUrlOf turns a stored object key into the address clients fetch it from. */
export function productMessage(product: Product, objectUrlOf: (key: string) => string): ProductMessage {
  return create(ProductSchema, {
    id: product.id,
    catalogId: product.catalogId,
    imageUrl: product.imageUrl,
    objectUrl: product.objectKey ? objectUrlOf(product.objectKey) : "",
    descriptor: product.descriptor,
    metadata: product.metadata,
    createAt: timestampFromDate(product.createdAt),
    status: Product_Status[product.status satisfies ProductStatus],
    rank: RankEnum[product.rank satisfies Rank],
    updateAt: timestampFromDate(product.updatedAt),
    error: product.status === "ERROR" ? (product.errorReason ?? "processing failed") : undefined,
  });
}

export function apiKeyMessage(key: ApiKeyView): ApiKey {
  return create(ApiKeySchema, {
    id: key.id,
    organizationId: key.organizationId,
    name: key.name,
    scopes: key.scopes,
    createdAt: timestampFromDate(key.createdAt),
    expiresAt: key.expiresAt ? timestampFromDate(key.expiresAt) : undefined,
    revokedAt: key.revokedAt ? timestampFromDate(key.revokedAt) : undefined,
    rateLimitPerSecond: key.rateLimitPerSecond ?? undefined,
  });
}

/** Enum number -> the documented name, "" for the unspecified zero value. */
export function enumName<E extends Record<string, string | number>>(enumObject: E, value: number | undefined): string {
  if (value === undefined || value === 0) return "";
  const name = enumObject[value];
  return typeof name === "string" ? name : String(value);
}
