/**
 * Facets: a name for each (field, value) pair of a product's attributes, so that an index of them
 * answers `eq` and `in` exactly as filters.ts defines them. Every top-level metadata value that is a
 * string, number or boolean (and every such element of an array) is a facet; a product passes
 * `eq field v` exactly when it holds the facet of (field, v) (same JSON type: the token is the JSON
 * of [field, v]; an array passes when an element does), so the products passing every eq/in filter
 * are an intersection of unions of facets. Two stores keep them: Redis's field postings beside a
 * vector set (SEARCH_FILTER_POSTINGS, storage/redis) and MySQL's product_facets table
 * (storage/mysql/product-facets.ts). Long tokens are cut and hashed: two values sharing a key only
 * add candidates, which the exact post-filter drops.
 */
import { createHash } from "node:crypto";
import type { JsonObject } from "../catalogs/model.js";
import type { MetadataFilter } from "./filters.js";

const MAX_TOKEN = 100;

/** A (field, value) pair's posting name; never contains a newline (JSON escapes them). */
export function facetToken(field: string, value: string | number | boolean): string {
  const token = JSON.stringify([field, value]);
  return token.length <= MAX_TOKEN ? token : `${token.slice(0, 60)}#${createHash("sha1").update(token).digest("hex")}`;
}

/** How every token of the field's values begins (the field's name is short: config.ts). */
export function tokenHead(field: string): string {
  return `[${JSON.stringify(field)},`;
}

/** The postings a product with these attributes belongs to. */
export function attributeFacets(attributes: JsonObject): string[] {
  const tokens = new Set<string>();
  for (const [field, value] of Object.entries(attributes)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") tokens.add(facetToken(field, v));
    }
  }
  return [...tokens];
}

/**
 * One group of postings per filter the postings answer (eq, in): a product passes those filters
 * exactly when, for every group, it holds one of the group's postings. Other filters get none.
 */
export function filterFacetGroups(filters: readonly MetadataFilter[]): string[][] {
  const groups: string[][] = [];
  for (const f of filters) {
    if (f.operator === "eq") groups.push([facetToken(f.field, f.value)]);
    else if (f.operator === "in") groups.push([...new Set(f.value.map((v) => facetToken(f.field, v)))]);
  }
  return groups;
}
