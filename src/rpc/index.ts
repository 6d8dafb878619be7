export { rpcRoutes, rpcRouterOptions, SERVICES } from "./routes.js";
export type { RpcCore } from "./routes.js";
export { API_KEY_HEADER } from "./interceptors.js";
