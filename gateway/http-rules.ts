import { getOption, hasOption } from "@bufbuild/protobuf";
import type { DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { http } from "../src/gen/google/api/annotations_pb.js";
import type { HttpRule } from "../src/gen/google/api/http_pb.js";
import { parsePathTemplate } from "./path-template.js";
import type { PathTemplate } from "./path-template.js";

export type HttpVerb = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

/** One HTTP route of an RPC, with every name in the annotation resolved against the descriptors. */
export interface HttpBinding {
  readonly method: DescMethodUnary;
  readonly verb: HttpVerb;
  readonly path: PathTemplate;
  /** Input fields bound by path variables, keyed by variable (= proto field) name. */
  readonly pathFields: ReadonlyMap<string, DescField>;
  /** `body: "*"`, `body: "<field>"`, or no body. */
  readonly body: "*" | DescField | undefined;
  /** The output field sent as the whole response body, if `response_body` is set. */
  readonly responseBody: DescField | undefined;
  readonly successStatus: number;
}

const VERBS = { get: "GET", post: "POST", put: "PUT", delete: "DELETE", patch: "PATCH" } as const;

/**
 * Every HTTP binding of every annotated method, including `additional_bindings`.
 * Throws on annotations the gateway cannot serve, so a bad proto fails at startup rather than on
 * the first request.
 */
/** A method's success status when it is not 200 (e.g. from a method option of the service's own). */
export type SuccessStatusOf = (method: DescMethod) => number | undefined;

export function readHttpBindings(services: readonly DescService[], successStatusOf: SuccessStatusOf = () => undefined): HttpBinding[] {
  const bindings: HttpBinding[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      const successStatus = successStatusOf(method) ?? 200;
      bindings.push(compileRule(method, rule, successStatus));
      for (const extra of rule.additionalBindings) {
        bindings.push(compileRule(method, extra, successStatus));
      }
    }
  }
  return bindings;
}

function compileRule(method: DescMethod, rule: HttpRule, successStatus: number): HttpBinding {
  const where = `${method.parent.typeName}.${method.name}`;
  const fail = (why: string): never => {
    throw new Error(`google.api.http rule of ${where}: ${why}`);
  };

  if (method.methodKind !== "unary") fail(`${method.methodKind} methods cannot be transcoded`);
  const { pattern } = rule;
  if (pattern.case === undefined) fail("no HTTP verb and path");
  if (pattern.case === "custom") fail(`custom verb "${pattern.value.kind}" is not supported`);
  const verb = VERBS[pattern.case as keyof typeof VERBS];

  let path: PathTemplate;
  try {
    path = parsePathTemplate(pattern.value as string);
  } catch (e) {
    return fail((e as Error).message);
  }

  const pathFields = new Map<string, DescField>();
  for (const name of path.variables) {
    const field = topLevelField(method.input, name) ?? fail(`path variable {${name}} is not a field of ${method.input.typeName}`);
    // A path segment is a single string, so only singular scalar and enum fields can take it.
    if (field.fieldKind !== "scalar" && field.fieldKind !== "enum") {
      fail(`path variable {${name}} must be a singular scalar or enum field`);
    }
    pathFields.set(name, field);
  }

  let body: "*" | DescField | undefined;
  if (rule.body === "*") {
    body = "*";
  } else if (rule.body !== "") {
    body = topLevelField(method.input, rule.body) ?? fail(`body "${rule.body}" is not a field of ${method.input.typeName}`);
    if (pathFields.has(body.name)) fail(`body field "${rule.body}" is also bound by the path`);
  }

  let responseBody: DescField | undefined;
  if (rule.responseBody !== "") {
    responseBody =
      topLevelField(method.output, rule.responseBody) ??
      fail(`response_body "${rule.responseBody}" is not a field of ${method.output.typeName}`);
  }

  if (!Number.isInteger(successStatus) || successStatus < 200 || successStatus > 299) {
    fail(`success status ${successStatus} is not a 2xx status`);
  }

  return {
    method: method as DescMethodUnary,
    verb,
    path,
    pathFields,
    body,
    responseBody,
    successStatus,
  };
}

// Nested field paths ("a.b") are valid in google.api.http but unused by our protos; keeping to
// top-level fields keeps request building a flat merge.
function topLevelField(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name);
}
