import { createContextKey } from "@connectrpc/connect";
import type { ContextValues } from "@connectrpc/connect";
import type { Principal } from "../auth/index.js";

/** Set by the auth interceptor for every call that reaches a handler. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "caller" });

/** A key a door already authenticated before reading the message, and whom it names. */
export interface CheckedKey {
  key: string;
  principal: Principal;
}

/**
 * Set by a door that checked the key before the message (key-first), so the auth interceptor does
 * not hash and look the same key up again. Only the listeners set it, never a caller.
 */
export const checkedKeyKey = createContextKey<CheckedKey | undefined>(undefined, { description: "key checked first" });

/** `values` with the door's checked key handed over to the auth interceptor, if there is one. */
export function withCheckedKey(values: ContextValues, checked: CheckedKey | undefined): ContextValues {
  if (checked !== undefined) values.set(checkedKeyKey, checked);
  return values;
}
