export { loadConfig, ConfigError, DEFAULT_LIMITS } from "./config.js";
export type { Config, Limits, ProcessingConfig, RateLimitConfig } from "./config.js";
export { loadCliSettings } from "./cli-settings.js";
export type { CliSettings } from "./cli-settings.js";
export {
  adminKeyPath,
  cacheDirFromEnvironment,
  childEnvironment,
  cliSettings,
  executableSearchPath,
  forkedWorkerEnvironment,
  serviceConfig,
  workerConfig,
} from "./environment.js";
