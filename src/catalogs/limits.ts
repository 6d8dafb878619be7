/** Field limits of catalogs and products; the README's "Limits" table mirrors these. */
export const FIELD_LIMITS = {
  catalogNameLength: 200,
  catalogDescriptionLength: 2000,
  productIdLength: 128,
  imageUrlLength: 2048,
  descriptorLength: 10_000,
  metadataBytes: 16 * 1024,
  metadataKeyLength: 128,
  maxPageSize: 100,
  defaultPageSize: 20,
  searchTermLength: 200,
} as const;

/**
 * Product ids are SKUs chosen by the caller. URL-unreserved characters only, so an id needs no
 * escaping in a REST path and reads the same everywhere.
 */
export const PRODUCT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;
