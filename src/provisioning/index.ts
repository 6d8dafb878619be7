export { provisionRedis8 } from "./redis8.js";
export type { ProvisionedRedis, ProvisionRedis8Options } from "./redis8.js";
