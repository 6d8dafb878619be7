/** What an organization key may be allowed to do. */
export const SCOPES = ["read", "write", "search"] as const;
export type Scope = (typeof SCOPES)[number];

/** What an operation requires: one scope, or the admin key. */
export type Requirement = Scope | "admin";

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
