import { permissionDenied } from "../errors/index.js";
import type { Requirement, Scope } from "./scopes.js";

/** Who is calling: the operator's admin key, or a key of one organization. */
export type Principal =
  | { kind: "admin" }
  | {
      kind: "organization";
      keyId: string;
      organizationId: string;
      scopes: readonly Scope[];
      /** The key's own rate limit (0: none); null: the service's default. */
      rateLimitPerSecond: number | null;
    };

/**
 * Throws permission_denied unless the principal may act on the organization with the
 * requirement. organizationId must already be canonical (lowercase).
 */
export function authorize(principal: Principal, organizationId: string, requirement: Requirement): void {
  if (principal.kind === "admin") return;
  if (requirement === "admin") {
    throw permissionDenied("this operation needs the admin key");
  }
  if (principal.organizationId !== organizationId) {
    throw permissionDenied("this API key belongs to another organization");
  }
  if (!principal.scopes.includes(requirement)) {
    throw permissionDenied(`this API key lacks the "${requirement}" scope`);
  }
}
