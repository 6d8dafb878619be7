/**
 * Failure kinds the core reports. Transports map them to their own codes (gRPC status,
 * HTTP status); the names follow the gRPC codes so the mapping is one-to-one.
 */
export type ErrorKind =
  | "invalid_argument"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "resource_exhausted"
  | "unavailable"
  | "internal";

/** An error whose message is meant for the caller: it says what was wrong and what to do. */
export class AppError extends Error {
  override name = "AppError";
  constructor(
    readonly kind: ErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export const invalidArgument = (message: string) => new AppError("invalid_argument", message);
export const notFound = (message: string) => new AppError("not_found", message);
export const alreadyExists = (message: string) => new AppError("already_exists", message);
export const unauthenticated = (message: string) => new AppError("unauthenticated", message);
export const permissionDenied = (message: string) => new AppError("permission_denied", message);
