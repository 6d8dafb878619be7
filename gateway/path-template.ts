// Only the subset of the google.api.http template grammar our protos use: literal segments and
// whole-segment `{field}` variables. Wildcards, nested field paths, `{field=...}` sub-templates and
// `:verb` suffixes would each need matching rules Fastify's router cannot express one-to-one, so
// they are rejected when the gateway starts rather than half-supported.

export interface PathTemplate {
  readonly template: string;
  /** Route path for Fastify, e.g. "/organizations/:organization_id/catalogs". */
  readonly routePath: string;
  /** Proto field names bound by the template, in order of appearance. */
  readonly variables: readonly string[];
  /** Matches a request path (no query) against the template, for 405 detection. */
  readonly matcher: RegExp;
}

const VARIABLE = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
// RFC 3986 unreserved characters; anything else would need escaping for Fastify (":" and "*" are
// router syntax) or is not valid in a path at all.
const LITERAL = /^[A-Za-z0-9._~-]+$/;

export function parsePathTemplate(template: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`unsupported HTTP path template "${template}": ${why}`);
  };
  if (!template.startsWith("/")) fail("it must start with /");
  if (template === "/") {
    return { template, routePath: "/", variables: [], matcher: /^\/$/ };
  }

  const variables: string[] = [];
  const routeSegments: string[] = [];
  const patternSegments: string[] = [];
  for (const segment of template.slice(1).split("/")) {
    if (segment === "") fail("empty path segment");
    const variable = VARIABLE.exec(segment);
    if (variable) {
      const field = variable[1] as string;
      if (variables.includes(field)) fail(`variable {${field}} appears twice`);
      variables.push(field);
      routeSegments.push(`:${field}`);
      patternSegments.push("[^/]+");
      continue;
    }
    if (segment.includes("{") || segment.includes("}")) {
      fail(`only whole-segment {field} variables are supported, got "${segment}"`);
    }
    if (segment.includes("*")) fail("wildcards are not supported");
    if (segment.includes(":")) fail("custom verbs (\":verb\") are not supported");
    if (!LITERAL.test(segment)) fail(`segment "${segment}" has characters outside [A-Za-z0-9._~-]`);
    routeSegments.push(segment);
    patternSegments.push(segment.replace(/[.]/g, "\\."));
  }

  return {
    template,
    routePath: "/" + routeSegments.join("/"),
    variables,
    matcher: new RegExp("^/" + patternSegments.join("/") + "$"),
  };
}
