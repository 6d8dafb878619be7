// Search and recommendations: the vector layout that makes one nearest-neighbour query rank by the
// documented score, metadata filters, the index's sync with MySQL, and the ports adapters implement.
export { Searcher } from "./searcher.js";
export type { RecommendationHit, SearchHit, SearchSettings } from "./searcher.js";
export { IndexSync, MAX_INDEX_PARTS } from "./index-sync.js";
export { startIndexSweeper } from "./index-sweeper.js";
export type { IndexSyncOptions, SyncResult } from "./index-sync.js";
export { hnswMFor, LARGE_SET_M, SMALL_SET_M, unfilteredEfFor } from "./hnsw-links.js";
export type { HnswMSetting, SearchEfSettings } from "./hnsw-links.js";
export { SEARCH_LIMITS } from "./requests.js";
export type { RecommendationRequest, SearchRequest } from "./requests.js";
export { FILTER_OPERATORS, matchesFilters, parseFilters } from "./filters.js";
export { attributeFacets, facetToken, filterFacetGroups, tokenHead } from "./filter-facets.js";
export type { FilterOperator, MetadataFilter, RawFilter } from "./filters.js";
export { elementVector, queryVector, scoreFromDots, VECTOR_LAYOUT_VERSION } from "./vector-layout.js";
export type { Boosts } from "./vector-layout.js";
export { VisualSpaces } from "./visual-space.js";
export type { StoredMap, VisualSpace } from "./visual-space.js";
export type {
  IndexableProduct,
  IndexAnswer,
  IndexBuild,
  IndexEntry,
  IndexHit,
  IndexQuery,
  LexicalHit,
  LexicalQuery,
  IndexSource,
  FacetSource,
  FacetStore,
  ProductEmbeddings,
  QueuedChange,
  SearchLog,
  SearchLogEntry,
  SearchSource,
  VectorIndex,
  VocabularyRead,
} from "./ports.js";
export { holderOrder, lexicalWords, LEXICAL_LIMITS } from "./lexical.js";
