export { loadConfig, ConfigError, DEFAULT_LIMITS } from "./config.js";
export type { Config, Limits, ProcessingConfig, RateLimitConfig } from "./config.js";
