import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../auth/index.js";

/** Set by the auth interceptor for every call that reaches a handler. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "caller" });
