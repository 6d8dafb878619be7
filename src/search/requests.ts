// Validation of search and recommendation requests: every rule of the interface, each failure a
// 400 that names the field.
import { parseProductId, parseUuid } from "../catalogs/index.js";
import { invalidArgument } from "../errors/index.js";
import { parseFilters } from "./filters.js";
import type { MetadataFilter, RawFilter } from "./filters.js";

export const SEARCH_LIMITS = {
  /** Results per request. */
  maxTopK: 500,
  /** Characters in a query. */
  maxQueryLength: 1000,
  /** Default topK of recommendations (search requires one). */
  defaultRecommendations: 10,
  sessionIdLength: 200,
  ipAddressLength: 64,
  userAgentLength: 1000,
} as const;

export interface SearchRequest {
  organizationId: string;
  catalogId: string;
  query: string;
  topK: number | undefined;
  visualWeight: number | undefined;
  similarityThreshold: number | undefined;
  filters: readonly RawFilter[];
  analytics: { sessionId?: string; ipAddress?: string; userAgent?: string } | undefined;
}

export interface RecommendationRequest {
  organizationId: string;
  catalogId: string;
  productId: string;
  topK: number | undefined;
  visualWeight: number | undefined;
  filters: readonly RawFilter[];
  includeMetadata: boolean | undefined;
}

export interface ParsedSearch {
  organizationId: string;
  catalogId: string;
  /** Lower-cased, trimmed. */
  query: string;
  topK: number;
  visualWeight: number;
  similarityThreshold: number;
  filters: MetadataFilter[];
  analytics: { sessionId: string | undefined; ipAddress: string | undefined; userAgent: string | undefined };
}

export interface ParsedRecommendation {
  organizationId: string;
  catalogId: string;
  productId: string;
  topK: number;
  visualWeight: number;
  filters: MetadataFilter[];
  includeMetadata: boolean;
}

export function parseSearchRequest(r: SearchRequest): ParsedSearch {
  const query = r.query.trim().toLowerCase();
  if (query === "") throw invalidArgument("query is required and must not be blank");
  if (query.length > SEARCH_LIMITS.maxQueryLength) {
    throw invalidArgument(`query must be at most ${SEARCH_LIMITS.maxQueryLength} characters`);
  }
  if (r.topK === undefined) throw invalidArgument("topK is required");
  if (r.visualWeight === undefined) throw invalidArgument("visual_weight is required");
  if (r.similarityThreshold === undefined) throw invalidArgument("similarity_threshold is required");
  const threshold = r.similarityThreshold;
  if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw invalidArgument(`similarity_threshold must be between 0 and 1, got ${threshold}`);
  }
  const analytics = r.analytics ?? {};
  return {
    organizationId: parseUuid(r.organizationId, "organizationId"),
    catalogId: parseUuid(r.catalogId, "catalogId"),
    query,
    topK: parseTopK(r.topK),
    visualWeight: parseVisualWeight(r.visualWeight, "visual_weight"),
    similarityThreshold: threshold,
    filters: parseFilters(r.filters),
    analytics: {
      sessionId: optionalText(analytics.sessionId, "user_analytics.session_id", SEARCH_LIMITS.sessionIdLength),
      ipAddress: optionalText(analytics.ipAddress, "user_analytics.ip_address", SEARCH_LIMITS.ipAddressLength),
      userAgent: optionalText(analytics.userAgent, "user_analytics.user_agent", SEARCH_LIMITS.userAgentLength),
    },
  };
}

export function parseRecommendationRequest(r: RecommendationRequest): ParsedRecommendation {
  return {
    organizationId: parseUuid(r.organizationId, "organizationId"),
    catalogId: parseUuid(r.catalogId, "catalogId"),
    // The Create Products rule: an id it could never have accepted must not reach a query (MySQL
    // refuses to compare the ascii_bin column with other characters).
    productId: parseProductId(r.productId),
    topK: parseTopK(r.topK ?? SEARCH_LIMITS.defaultRecommendations),
    visualWeight: parseVisualWeight(r.visualWeight ?? 1, "visualWeight"),
    filters: parseFilters(r.filters),
    includeMetadata: r.includeMetadata ?? true,
  };
}

function parseTopK(topK: number): number {
  if (!Number.isInteger(topK) || topK < 1 || topK > SEARCH_LIMITS.maxTopK) {
    throw invalidArgument(`topK must be an integer from 1 to ${SEARCH_LIMITS.maxTopK}, got ${topK}`);
  }
  return topK;
}

function parseVisualWeight(weight: number, field: string): number {
  if (!Number.isFinite(weight) || weight <= 0 || weight > 1) {
    throw invalidArgument(`${field} must be greater than 0 and at most 1, got ${weight}`);
  }
  return weight;
}

function optionalText(value: string | undefined, field: string, max: number): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (value.length > max) throw invalidArgument(`${field} must be at most ${max} characters`);
  return value;
}
