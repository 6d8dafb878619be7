import { Code, ConnectError } from "@connectrpc/connect";
import type { Interceptor } from "@connectrpc/connect";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ApiKeys, Requirement } from "../auth/index.js";
import { authorize } from "../auth/index.js";
import { parseUuid } from "../catalogs/index.js";
import { AppError } from "../errors/index.js";
import type { ErrorKind } from "../errors/index.js";
import type { Logger } from "../logging/index.js";
import { API_KEY_HEADER, REQUEST_ID_HEADER } from "./headers.js";
import { checkedKeyKey, principalKey } from "./principal-context.js";
import type { CheckedKey } from "./principal-context.js";


const codeOf: Record<ErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
};

/** How unexpected errors are told apart and reported; supplied by the operations layer. */
export interface ErrorPolicy {
  /** Told of each unexpected error before it becomes "internal error". */
  onInternal?: (error: unknown) => void;
  /**
   * Names the data store ("MySQL", "Redis") when the error says it is unreachable rather than
   * faulty; such calls fail as UNAVAILABLE with a retry hint instead of INTERNAL.
   */
  unavailableStore?: (error: unknown) => string | undefined;
  /** Told of each call refused because a store was unreachable. */
  onUnavailable?: (store: string, error: unknown) => void;
}

/** Seconds a caller is told to wait (`retry-after`) when a store is unreachable. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * Outermost interceptor: core errors become their gRPC codes with the core's message; anything
 * unexpected is logged here and leaves as a bare "internal error", so no SQL or stack reaches a caller.
 */
export function errorInterceptor(log: Logger, policy: ErrorPolicy = {}): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      throw toConnectError(error, log, policy, { rpc: req.method.name, reqId: req.header.get(REQUEST_ID_HEADER) ?? undefined });
    }
  };
}

/** The error a caller sees for anything thrown while serving a call; see {@link errorInterceptor}. */
export function toConnectError(error: unknown, log: Logger, policy: ErrorPolicy, context: { rpc: string; reqId?: string | undefined }): ConnectError {
  if (error instanceof AppError) return new ConnectError(error.message, codeOf[error.kind]);
  if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) return error;
  const store = policy.unavailableStore?.(error);
  if (store !== undefined) {
    // Expected while a store is down: counted, and visible in readiness and its log lines, not
    // logged once per call.
    policy.onUnavailable?.(store, error);
    return new ConnectError(`${store} is unavailable; retry in a moment`, Code.Unavailable, {
      "retry-after": String(STORE_RETRY_AFTER_SECONDS),
    });
  }
  policy.onInternal?.(error);
  log.error({ err: error, ...context }, "rpc failed");
  return new ConnectError("internal error", Code.Internal);
}

/**
 * The key check alone, for doors that must refuse a bad key before reading the request (the REST
 * gateway checks it before parsing the body). Throws the ConnectError a caller should see; a good
 * key comes back with its principal, for the door to hand to the auth interceptor (withCheckedKey).
 */
export function keyCheck(keys: ApiKeys, log: Logger, policy: ErrorPolicy): (key: string | null) => Promise<CheckedKey> {
  return async (key) => {
    try {
      const principal = await keys.authenticate(key);
      // authenticate refuses a missing key, so a principal always comes with one.
      return { key: key!, principal };
    } catch (error) {
      throw toConnectError(error, log, policy, { rpc: "authenticate" });
    }
  };
}

/**
 * Authenticates the key and authorizes the call against the method's declared requirement and
 * the request's organizationId, before any handler runs. Services in `publicServices` (the
 * standard gRPC health service, which carries no access rules) need no key. A key its door already
 * authenticated (checkedKeyKey) is not authenticated again, but only when it is the very header
 * this call carries; calls from doors without that step (in process) are authenticated here.
 */
export function authInterceptor(
  keys: ApiKeys,
  requirements: Map<DescMethod, Requirement>,
  publicServices: readonly DescService[] = [],
): Interceptor {
  const open = new Set(publicServices.map((service) => service.typeName));
  return (next) => async (req) => {
    if (open.has(req.service.typeName)) return next(req);
    const requirement = requirements.get(req.method);
    if (!requirement) throw new ConnectError("method has no access rule", Code.Internal);
    const presented = req.header.get(API_KEY_HEADER);
    const checked = req.contextValues.get(checkedKeyKey);
    const principal = checked !== undefined && checked.key === presented ? checked.principal : await keys.authenticate(presented);
    const organizationId = req.stream ? "" : String((req.message as { organizationId?: unknown }).organizationId ?? "");
    authorize(principal, parseUuid(organizationId, "organizationId"), requirement);
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}
