/** The slice of pino's interface the core uses, so the core does not depend on Fastify's logger. */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
