import { Code, ConnectError } from "@connectrpc/connect";

/** The status code a call fails with; throws if it succeeds. */
export async function codeOf(call: Promise<unknown>): Promise<Code> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error).code;
  }
  throw new Error("expected the call to fail");
}
