import { Code, ConnectError } from "@connectrpc/connect";

/** The documented Error object; every error response of the gateway has exactly these fields. */
export interface ErrorObject {
  status: number;
  message: string;
  time: string;
  method: string;
  url: string;
}

/** An error the gateway itself decided on; its message is meant for the caller. */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export interface ErrorResponse {
  readonly status: number;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
  /** True when the cause was replaced by a generic message and should be logged. */
  readonly internal: boolean;
}

const INTERNAL_MESSAGE = "internal server error";

const STATUS_BY_CODE: ReadonlyMap<Code, number> = new Map([
  [Code.InvalidArgument, 400],
  [Code.FailedPrecondition, 400],
  [Code.OutOfRange, 400],
  [Code.Unauthenticated, 401],
  [Code.PermissionDenied, 403],
  [Code.NotFound, 404],
  [Code.AlreadyExists, 409],
  [Code.Aborted, 409],
  [Code.ResourceExhausted, 429],
  // Not a registered HTTP status; the de-facto "client closed request" that gRPC gateways use.
  [Code.Canceled, 499],
  [Code.Unimplemented, 501],
  [Code.Unavailable, 503],
  [Code.DeadlineExceeded, 504],
]);

export function httpStatusForCode(code: Code): number {
  return STATUS_BY_CODE.get(code) ?? 500;
}

// Metadata the RPC layer may attach to an error that the HTTP caller needs as a header.
const FORWARDED_ERROR_HEADERS = ["retry-after"] as const;

/** Decides status, message and headers for anything thrown while serving a gateway request. */
export function toErrorResponse(err: unknown, bodyLimit: number | undefined): ErrorResponse {
  if (err instanceof GatewayError) {
    return { status: err.status, message: err.message, headers: err.headers, internal: false };
  }
  if (err instanceof ConnectError) {
    const status = httpStatusForCode(err.code);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_ERROR_HEADERS) {
      const value = err.metadata.get(name);
      if (value !== null) headers[name] = value;
    }
    // Codes that land on 500 carry server internals (SQL errors, stack fragments) in their text.
    if (status === 500) return { status, message: INTERNAL_MESSAGE, headers, internal: true };
    return { status, message: err.rawMessage, headers, internal: false };
  }
  const fastifyError = asFastifyClientError(err);
  if (fastifyError) {
    if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const limit = bodyLimit === undefined ? "" : ` of ${bodyLimit} bytes`;
      return { status: 413, message: `request body is larger than the limit${limit}`, headers: {}, internal: false };
    }
    return { status: fastifyError.statusCode, message: fastifyError.message, headers: {}, internal: false };
  }
  return { status: 500, message: INTERNAL_MESSAGE, headers: {}, internal: true };
}

export function errorObject(request: { method: string; url: string }, status: number, message: string): ErrorObject {
  return { status, message, time: new Date().toISOString(), method: request.method, url: request.url };
}

// Fastify's own request errors (body too large, bad content length, unsupported media type) are
// safe to show: their messages describe the request, not the server. Other libraries' errors with
// a statusCode are not trusted that far.
function asFastifyClientError(err: unknown): { code: string; statusCode: number; message: string } | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const { code, statusCode, message } = err as { code?: unknown; statusCode?: unknown; message?: unknown };
  if (typeof code !== "string" || !code.startsWith("FST_")) return undefined;
  if (typeof statusCode !== "number" || statusCode < 400 || statusCode > 499) return undefined;
  return { code, statusCode, message: typeof message === "string" ? message : "bad request" };
}
