import { Code, ConnectError } from "@connectrpc/connect";
import type { Interceptor } from "@connectrpc/connect";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ApiKeyService, Requirement } from "../auth/index.js";
import { authorize } from "../auth/index.js";
import { parseUuid } from "../catalogs/index.js";
import { AppError } from "../errors/index.js";
import type { ErrorKind } from "../errors/index.js";
import type { Logger } from "../logging/index.js";
import { principalKey } from "./principal-context.js";

/** gRPC metadata / HTTP header that carries the key (HTTP header SERVICE_API_KEY). */
export const API_KEY_HEADER = "service_api_key";

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

/**
 * Outermost interceptor: core errors become their gRPC codes with the core's message; anything
 * unexpected is logged here and leaves as a bare "internal error", so no SQL or stack reaches a caller.
 * `onInternal` sees each unexpected error (the metrics count the store errors among them).
 */
export function errorInterceptor(log: Logger, onInternal: (error: unknown) => void = () => undefined): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof AppError) throw new ConnectError(error.message, codeOf[error.kind]);
      if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) throw error;
      onInternal(error);
      log.error({ err: error, rpc: req.method.name, reqId: req.header.get("x-request-id") ?? undefined }, "rpc failed");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}

/**
 * Authenticates the key and authorizes the call against the method's declared requirement and
 * the request's organizationId, before any handler runs. Services in `publicServices` (the
 * standard gRPC health service, which carries no access rules) need no key.
 */
export function authInterceptor(
  keys: ApiKeyService,
  requirements: Map<DescMethod, Requirement>,
  publicServices: readonly DescService[] = [],
): Interceptor {
  const open = new Set(publicServices.map((service) => service.typeName));
  return (next) => async (req) => {
    if (open.has(req.service.typeName)) return next(req);
    const requirement = requirements.get(req.method);
    if (!requirement) throw new ConnectError("method has no access rule", Code.Internal);
    const principal = await keys.authenticate(req.header.get(API_KEY_HEADER));
    const organizationId = req.stream ? "" : String((req.message as { organizationId?: unknown }).organizationId ?? "");
    authorize(principal, parseUuid(organizationId, "organizationId"), requirement);
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}
