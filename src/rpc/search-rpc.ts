import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { JsonValue } from "../catalogs/index.js";
import type { Filter } from "../gen/vitrine/v1/common_pb.js";
import { Filter_Operator } from "../gen/vitrine/v1/common_pb.js";
import { RecommendationService } from "../gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService as SearchServiceDesc } from "../gen/vitrine/v1/search_service_pb.js";
import type { RawFilter, SearchService } from "../search/index.js";
import { enumName } from "./messages.js";

export function searchRpc(search: SearchService): ServiceImpl<typeof SearchServiceDesc> {
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

export function recommendationRpc(search: SearchService): ServiceImpl<typeof RecommendationService> {
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
    value: filter.value === undefined ? undefined : (toJson(ValueSchema, filter.value) as JsonValue),
  };
}
