export type { Logger } from "./logger.js";
export { createLogger, capLine, MAX_LOG_LINE_BYTES } from "./create-logger.js";
export { safeError } from "./safe-error.js";
export type { SafeError } from "./safe-error.js";
