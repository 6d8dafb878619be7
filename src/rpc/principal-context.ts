import { createContextKey } from "@connectrpc/connect";
import type { HandlerContext } from "@connectrpc/connect";
import type { Principal } from "../auth/index.js";

/** Set by the auth interceptor for every call that reaches a handler. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "caller" });

export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal) throw new Error("no principal: the auth interceptor did not run");
  return principal;
}
