import { Code, ConnectError } from "@connectrpc/connect";
import type { ServiceImpl } from "@connectrpc/connect";
import { RecommendationService } from "../gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../gen/vitrine/v1/search_service_pb.js";

// Search and recommendations need product embeddings and the vector index; until those land the
// RPCs exist (so clients can be generated against the full contract) and say so honestly.
const notYet = () => new ConnectError("search and recommendations are not available yet", Code.Unimplemented);

export function searchRpc(): ServiceImpl<typeof SearchService> {
  return {
    searchProducts() {
      throw notYet();
    },
  };
}

export function recommendationRpc(): ServiceImpl<typeof RecommendationService> {
  return {
    getRecommendations() {
      throw notYet();
    },
  };
}
