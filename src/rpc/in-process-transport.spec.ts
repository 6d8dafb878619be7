import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey } from "@connectrpc/connect";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus } from "../gen/grpc/health/v1/health_pb.js";
import { createInProcessTransport, IN_PROCESS_PROTOCOL } from "./in-process-transport.js";

const seenKey = createContextKey<string[]>([], { description: "test: interceptors seen" });

function routes(router: ConnectRouter): void {
  router.service(Health, {
    check(request, context) {
      if (request.service === "boom") throw new Error("database on fire");
      if (request.service === "refused") throw new ConnectError("slow down", Code.ResourceExhausted, { "retry-after": "3" });
      context.responseHeader.set("x-served-by", context.protocolName);
      return {
        status: HealthCheckResponse_ServingStatus.SERVING,
        // The interceptors' trace and the forwarded header travel back through the status name.
        ...(request.service === "trace"
          ? { status: context.values.get(seenKey).length + (context.requestHeader.get("x-caller") === "gateway" ? 10 : 0) }
          : {}),
      };
    },
  });
}

const tracing = (name: string): Interceptor => (next) => async (req) => {
  req.contextValues.set(seenKey, [...req.contextValues.get(seenKey), name]);
  const response = await next(req);
  response.header.append("x-order", name);
  return response;
};

describe("createInProcessTransport", () => {
  const transport = createInProcessTransport(routes, [tracing("outer"), tracing("inner")]);
  const client = createClient(Health, transport);

  it("calls the implementation through every interceptor, with the request headers, and returns its response headers", async () => {
    let header: Headers | undefined;
    const response = await client.check(
      create(HealthCheckRequestSchema, { service: "trace" }),
      { headers: { "x-caller": "gateway" }, onHeader: (h) => (header = h) },
    );
    expect(response.status).toBe(12);
    expect(header?.get("x-served-by")).toBe(IN_PROCESS_PROTOCOL);
    // Responses unwind inner first.
    expect(header?.get("x-order")).toBe("inner, outer");
  });

  it("accepts an init object as well as a message", async () => {
    const response = await client.check({ service: "" });
    expect(response.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("lets ConnectErrors out with their code and metadata, and anything else as a ConnectError", async () => {
    const refused = await client.check({ service: "refused" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((refused as ConnectError).metadata.get("retry-after")).toBe("3");

    const failed = await client.check({ service: "boom" }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ConnectError);
    expect((failed as ConnectError).code).toBe(Code.Unknown);
  });

  it("refuses streaming methods and methods nothing registered", async () => {
    const watch = client.watch({ service: "" });
    await expect(watch[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: Code.Unimplemented });

    const empty = createClient(Health, createInProcessTransport(() => undefined, []));
    await expect(empty.check({ service: "" })).rejects.toMatchObject({ code: Code.Unimplemented });
  });
});
