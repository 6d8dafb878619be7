export { PUBLIC_SERVICES, rpcRoutes, rpcRouterOptions, SERVICES } from "./routes.js";
export type { OperationsInterceptors, RpcCore } from "./routes.js";
export { API_KEY_HEADER, keyCheck, STORE_RETRY_AFTER_SECONDS } from "./interceptors.js";
export type { ErrorPolicy } from "./interceptors.js";
export { createInProcessTransport, IN_PROCESS_PROTOCOL, methodImplementations } from "./in-process-transport.js";
export { reflectionServices, ServerReflection, ServerReflectionV1Alpha } from "./reflection.js";
