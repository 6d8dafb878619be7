export { ApiKeys } from "./api-keys.js";
export type { ApiKeyView } from "./api-keys.js";
export type { ApiKeyRecord, ApiKeyRepository } from "./api-key-repository.js";
export { authorize } from "./principal.js";
export type { Principal } from "./principal.js";
export { SCOPES, isScope } from "./scopes.js";
export type { Requirement, Scope } from "./scopes.js";
