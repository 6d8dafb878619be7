import type { ConnectRouter, ConnectRouterOptions, Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import type { ApiKeys } from "../auth/index.js";
import type { Catalogs, Products } from "../catalogs/index.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { ApiKeyService } from "../gen/vitrine/v1/api_key_service_pb.js";
import { CatalogService } from "../gen/vitrine/v1/catalog_service_pb.js";
import { ProductService } from "../gen/vitrine/v1/product_service_pb.js";
import { RecommendationService } from "../gen/vitrine/v1/recommendation_service_pb.js";
import { SearchService } from "../gen/vitrine/v1/search_service_pb.js";
import type { Logger } from "../logging/index.js";
import type { ObjectStore } from "../processing/index.js";
import type { Searcher } from "../search/index.js";
import { apiKeyRpc } from "./api-key-rpc.js";
import { catalogRpc } from "./catalog-rpc.js";
import { authInterceptor, errorInterceptor } from "./interceptors.js";
import type { ErrorPolicy } from "./interceptors.js";
import { productRpc } from "./product-rpc.js";
import { requirementsOf } from "./method-options.js";
import { ServerReflection, ServerReflectionV1Alpha } from "./reflection.js";
import { recommendationRpc, searchRpc } from "./search-rpc.js";

export interface RpcCore {
  catalogs: Catalogs;
  products: Products;
  apiKeys: ApiKeys;
  objects: ObjectStore;
  search: Searcher;
}

/** Every service of the public contract, in the order the REST gateway and docs list them. */
export const SERVICES: DescService[] = [
  CatalogService,
  ProductService,
  SearchService,
  RecommendationService,
  ApiKeyService,
];

/**
 * Services any caller may use without a key: gRPC's standard health and server reflection
 * services. Reflection tells only what the protos in this repository say.
 */
export const PUBLIC_SERVICES: DescService[] = [Health, ServerReflection, ServerReflectionV1Alpha];

export function rpcRoutes(core: RpcCore): (router: ConnectRouter) => void {
  return (router) => {
    router.service(CatalogService, catalogRpc(core.catalogs, core.search));
    router.service(ProductService, productRpc(core.products, core.objects));
    router.service(SearchService, searchRpc(core.search));
    router.service(RecommendationService, recommendationRpc(core.search));
    router.service(ApiKeyService, apiKeyRpc(core.apiKeys));
  };
}

/** Interceptors the operations layer adds around the RPC layer's own. */
export interface OperationsInterceptors {
  /** Outside the error interceptor: they see every call with its final code (metrics). */
  outer?: Interceptor[];
  /** After authentication: they see the caller (rate limiting). */
  afterAuth?: Interceptor[];
  /** How unexpected errors are classified and reported (internal, or a store unavailable). */
  errors?: ErrorPolicy;
}

const COMPRESS_MIN_BYTES = 64 * 1024;

/** Options shared by every transport, so gRPC, Connect and the REST gateway behave alike. */
export function rpcRouterOptions(
  core: RpcCore,
  log: Logger,
  maxRequestBytes: number,
  operations: OperationsInterceptors = {},
): Partial<ConnectRouterOptions> {
  return {
    interceptors: [
      ...(operations.outer ?? []),
      errorInterceptor(log, operations.errors),
      authInterceptor(core.apiKeys, requirementsOf(SERVICES), PUBLIC_SERVICES),
      ...(operations.afterAuth ?? []),
    ],
    jsonOptions: { alwaysEmitImplicit: true },
    readMaxBytes: maxRequestBytes,
    // Gzip costs more CPU than it saves bytes on small messages: a search answer (a few KB) took
    // about 1 ms longer to serve compressed. Large answers (product lists) are still compressed
    // for callers that accept it.
    compressMinBytes: COMPRESS_MIN_BYTES,
  };
}
