// createCallContext must end calls as Connect's createHandlerContext does: deadline, the caller's
// signal, the door's own abort, with the same reasons.
import { Code, ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { SearchService } from "../gen/vitrine/v1/search_service_pb.js";
import { createCallContext } from "./call-context.js";

const method = SearchService.method.searchProducts;

type Init = { timeoutMs?: number; requestSignal?: AbortSignal };
const both = (init: Init) => [
  createCallContext({ method, protocolName: "test", requestHeader: new Headers({ a: "1" }), ...init }),
  createHandlerContext({
    service: method.parent,
    method,
    protocolName: "test",
    requestMethod: "POST",
    url: `/${method.parent.typeName}/${method.name}`,
    requestHeader: new Headers({ a: "1" }),
    ...init,
  }),
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const codeOf = (reason: unknown) => (reason instanceof ConnectError ? reason.code : (reason as Error).name);

describe("createCallContext", () => {
  it("describes the call as Connect's handler context does", () => {
    const [own, connect] = both({});
    for (const key of ["service", "method", "protocolName", "requestMethod", "url"] as const) expect(own![key]).toBe(connect![key]);
    expect(own!.requestHeader.get("a")).toBe("1");
    expect(own!.timeoutMs()).toBeUndefined();
    expect(own!.signal.aborted).toBe(false);
    const values = createContextValues();
    expect(createCallContext({ method, protocolName: "t", requestHeader: new Headers(), contextValues: values }).values).toBe(values);
  });

  it("aborts with DEADLINE_EXCEEDED at the deadline, and at once for a deadline already past", async () => {
    for (const timeoutMs of [20, 0, -5]) {
      const contexts = both({ timeoutMs });
      expect(contexts[0]!.timeoutMs()).toBeLessThanOrEqual(timeoutMs);
      await sleep(40);
      for (const context of contexts) {
        expect(context.signal.aborted).toBe(true);
        expect(codeOf(context.signal.reason)).toBe(Code.DeadlineExceeded);
        expect((context.signal.reason as ConnectError).rawMessage).toBe("the operation timed out");
      }
    }
  });

  it("aborts with the caller's reason when the caller's signal aborts, before or during the call", () => {
    for (const early of [true, false]) {
      const caller = new AbortController();
      if (early) caller.abort();
      const contexts = both({ requestSignal: caller.signal, timeoutMs: 10_000 });
      caller.abort();
      for (const context of contexts) {
        expect(context.signal.aborted).toBe(true);
        expect(context.signal.reason).toBe(caller.signal.reason);
      }
    }
  });

  it("ends with the door's reason, which the deadline and the caller then leave alone", async () => {
    const caller = new AbortController();
    const contexts = both({ requestSignal: caller.signal, timeoutMs: 10 });
    const ended = new ConnectError("the call has ended", Code.Canceled);
    for (const context of contexts) (context as unknown as { abort(reason: unknown): void }).abort(ended);
    caller.abort();
    await sleep(30);
    for (const context of contexts) expect(context.signal.reason).toBe(ended);
  });
});
