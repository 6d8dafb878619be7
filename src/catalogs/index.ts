export { Catalogs } from "./catalogs.js";
export { NO_CATALOG_EVENTS } from "./events.js";
export type { CatalogEvents } from "./events.js";
export { Products } from "./products.js";
export type { ListProductsInput, ProductPage } from "./products.js";
export type { CatalogRepository, ProductRepository, ProductQuery } from "./repositories.js";
export type { ProductInput } from "./validation.js";
export { FIELD_LIMITS, PRODUCT_ID_PATTERN } from "./limits.js";
export { parseProductId, parseUuid } from "./validation.js";
export { catalogStatus, emptyStatusCounts, PRODUCT_STATUSES, RANKS } from "./model.js";
export type {
  TextImageMapStatus,
  Catalog,
  CatalogRecord,
  CatalogStatus,
  JsonObject,
  JsonValue,
  NewProduct,
  Product,
  ProductStatus,
  Rank,
  StatusCounts,
} from "./model.js";
