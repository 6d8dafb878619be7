import { getOption, hasOption } from "@bufbuild/protobuf";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Requirement } from "../auth/index.js";
import { isScope } from "../auth/index.js";
import { required_scope } from "../gen/vitrine/v1/options_pb.js";

/** Reads each method's `required_scope` option; throws at start-up when one is missing or unknown. */
export function requirementsOf(services: DescService[]): Map<DescMethod, Requirement> {
  const requirements = new Map<DescMethod, Requirement>();
  for (const service of services) {
    for (const method of service.methods) {
      const value = hasOption(method, required_scope) ? getOption(method, required_scope) : "";
      if (value !== "admin" && !isScope(value)) {
        throw new Error(`${service.typeName}.${method.name} has no valid (vitrine.v1.required_scope) option`);
      }
      requirements.set(method, value);
    }
  }
  return requirements;
}
