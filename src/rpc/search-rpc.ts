import type { Value } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { JsonValue } from "../catalogs/index.js";
import type { Filter } from "../gen/vitrine/v1/common_pb.js";
import { Filter_Operator } from "../gen/vitrine/v1/common_pb.js";
import { RecommendationService } from "../gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../gen/vitrine/v1/search_service_pb.js";
import type { RawFilter, Searcher } from "../search/index.js";
import { enumName } from "./messages.js";

export function searchRpc(search: Searcher): ServiceImpl<typeof SearchService> {
  return {
    async searchProducts(req) {
      const analytics = req.userAnalytics;
      const hits = await search.search({
        organizationId: req.organizationId,
        catalogId: req.catalogId,
        query: req.query,
        topK: req.topK,
        visualWeight: req.visualWeight,
        similarityThreshold: req.similarityThreshold,
        filters: req.filters.map(rawFilter),
        analytics: analytics && { sessionId: analytics.sessionId, ipAddress: analytics.ipAddress, userAgent: analytics.userAgent },
      });
      return { status: "success", results: hits };
    },
  };
}

export function recommendationRpc(search: Searcher): ServiceImpl<typeof RecommendationService> {
  return {
    async getRecommendations(req) {
      const hits = await search.recommend({
        organizationId: req.organizationId,
        catalogId: req.catalogId,
        productId: req.productId,
        topK: req.topK,
        visualWeight: req.visualWeight,
        filters: req.filters.map(rawFilter),
        includeMetadata: req.includeMetadata,
      });
      return { status: "success", results: hits };
    },
  };
}

function rawFilter(filter: Filter): RawFilter {
  return {
    field: filter.field,
    operator: enumName(Filter_Operator, filter.operator),
    value: filter.value === undefined ? undefined : jsonOf(filter.value),
  };
}

/**
 * A protobuf Value as the JSON value the core validates. By hand, not with toJson: a gRPC caller
 * can send what JSON cannot hold (NaN, Infinity, a Value with nothing set), and those must reach
 * validation and come back as a 400 naming the filter, not fail here as an internal error.
 */
function jsonOf(value: Value): JsonValue | undefined {
  const { kind } = value;
  switch (kind.case) {
    case "nullValue":
      return null;
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return kind.value;
    case "listValue":
      return kind.value.values.map((item) => jsonOf(item) ?? null);
    case "structValue":
      return Object.fromEntries(Object.entries(kind.value.fields).map(([key, item]) => [key, jsonOf(item) ?? null]));
    default:
      return undefined;
  }
}
