export { loadConfig, ConfigError, DEFAULT_LIMITS } from "./config.js";
export type { Config, Limits } from "./config.js";
