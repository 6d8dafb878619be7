export { PUBLIC_SERVICES, rpcRoutes, rpcRouterOptions, SERVICES } from "./routes.js";
export type { OperationsInterceptors, RpcCore } from "./routes.js";
export { keyCheck, STORE_RETRY_AFTER_SECONDS } from "./interceptors.js";
export { API_KEY_HEADER, REQUEST_ID_HEADER } from "./headers.js";
export type { ErrorPolicy } from "./interceptors.js";
export { createInProcessTransport, IN_PROCESS_PROTOCOL, methodImplementations } from "./in-process-transport.js";
export { httpSuccessStatusOf, requiredScopeOf } from "./method-options.js";
export { reflectionServices, ServerReflection, ServerReflectionV1Alpha } from "./reflection.js";
