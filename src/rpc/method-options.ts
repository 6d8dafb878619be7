// The contract's own method options (proto/vitrine/v1/options.proto), read in one place: the auth
// interceptor needs each method's scope, and the REST gateway, which knows only google.api.http,
// is handed the scope and the success status through these functions.
import { getOption, hasOption } from "@bufbuild/protobuf";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Requirement } from "../auth/index.js";
import { isScope } from "../auth/index.js";
import { http_success_status, required_scope } from "../gen/vitrine/v1/options_pb.js";

/** The method's `required_scope` option; undefined when it has none. */
export function requiredScopeOf(method: DescMethod): string | undefined {
  return hasOption(method, required_scope) ? getOption(method, required_scope) : undefined;
}

/** The method's `http_success_status` option (e.g. 201 for a create); undefined for the usual 200. */
export function httpSuccessStatusOf(method: DescMethod): number | undefined {
  return hasOption(method, http_success_status) ? getOption(method, http_success_status) : undefined;
}

/** Reads each method's `required_scope` option; throws at start-up when one is missing or unknown. */
export function requirementsOf(services: DescService[]): Map<DescMethod, Requirement> {
  const requirements = new Map<DescMethod, Requirement>();
  for (const service of services) {
    for (const method of service.methods) {
      const value = requiredScopeOf(method) ?? "";
      if (value !== "admin" && !isScope(value)) {
        throw new Error(`${service.typeName}.${method.name} has no valid (vitrine.v1.required_scope) option`);
      }
      requirements.set(method, value);
    }
  }
  return requirements;
}
