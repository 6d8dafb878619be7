export { restGateway } from "./plugin.js";
export type { RestGatewayOptions } from "./plugin.js";
export { errorObject, httpStatusForCode } from "./error-object.js";
export type { ErrorObject } from "./error-object.js";
export { buildOpenApiDocument } from "./openapi.js";
export type { OpenApiDocument, OpenApiOptions } from "./openapi.js";
