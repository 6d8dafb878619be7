/** The data stores the service depends on, as operators see them in metrics and readiness. */
export type Store = "mysql" | "redis";

/**
 * Which store an error came from (driver error shapes are storage's knowledge: see
 * storage/store-errors.ts); undefined when the error names neither.
 */
export type StoreOfError = (error: unknown) => Store | undefined;
