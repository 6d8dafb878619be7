// The gRPC port's own behaviour on the wire (served by @grpc/grpc-js): the key before the message,
// malformed messages, request ids and log lines, shutdown with a client still connected.
import http2 from "node:http2";
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CatalogService, ListCatalogsRequestSchema } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { codeOf } from "../support/connect-errors.js";

let server: TestServer;
const org = randomUUID();
let key: string;

beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: "info" }, { captureLogs: true });
  key = await server.createKey(org);
});
afterAll(() => server?.close());

interface RawAnswer {
  /** HEADERS frames in order (the first with :status), trailers last when sent apart. */
  frames: Record<string, unknown>[];
  data: number;
}

/** One gRPC call over a bare HTTP/2 stream, so the test sees frames as a client receives them. */
function rawCall(path: string, headers: Record<string, string>, body: Uint8Array): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(server.grpcUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    const frames: Record<string, unknown>[] = [];
    let data = 0;
    stream.on("response", (h) => frames.push({ ...h }));
    stream.on("trailers", (h) => frames.push({ ...h }));
    stream.on("data", (chunk: Buffer) => (data += chunk.length));
    stream.on("close", () => {
      session.close();
      resolve({ frames, data });
    });
    stream.on("error", reject);
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    frame.set(body, 5);
    stream.end(frame);
  });
}

const GARBAGE = Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);

describe("the gRPC port", () => {
  it("answers a bad key with a trailers-only UNAUTHENTICATED whatever the message holds", async () => {
    for (const headers of [{}, { service_api_key: "nonsense" }] as Record<string, string>[]) {
      const answer = await rawCall("/vitrine.v1.CatalogService/ListCatalogs", { ...headers, "x-request-id": "refused-1" }, GARBAGE);
      expect(answer.frames).toHaveLength(1);
      expect(answer.frames[0]).toMatchObject({ ":status": 200, "grpc-status": "16", "x-request-id": "refused-1" });
      expect(answer.data).toBe(0);
    }
    expect(server.logs.some((line) => line.reqId === "refused-1" && line.code === "UNAUTHENTICATED")).toBe(true);
  });

  it("answers INVALID_ARGUMENT, not INTERNAL, to a message that does not parse under a good key", async () => {
    const answer = await rawCall("/vitrine.v1.CatalogService/ListCatalogs", { service_api_key: key }, GARBAGE);
    expect(answer.frames.at(-1)).toMatchObject({ "grpc-status": String(Code.InvalidArgument) });
    const good = await rawCall(
      "/vitrine.v1.CatalogService/ListCatalogs",
      { service_api_key: key, "x-request-id": "good-1" },
      toBinary(ListCatalogsRequestSchema, create(ListCatalogsRequestSchema, { organizationId: org })),
    );
    expect(good.frames[0]).toMatchObject({ ":status": 200, "x-request-id": "good-1" });
    expect(good.frames.at(-1)).toMatchObject({ "grpc-status": "0" });
    const line = server.logs.find((l) => l.reqId === "good-1");
    expect(line).toMatchObject({ rpc: "/vitrine.v1.CatalogService/ListCatalogs", code: "OK" });
    expect(typeof line?.ms).toBe("number");
    expect(JSON.stringify(line)).not.toContain(key.split("_").pop()!);
  });

  it("answers UNIMPLEMENTED for a method it does not serve", async () => {
    const answer = await rawCall("/vitrine.v1.CatalogService/NoSuchMethod", { service_api_key: key }, new Uint8Array());
    expect(answer.frames.at(-1)).toMatchObject({ "grpc-status": String(Code.Unimplemented) });
  });
});

describe("shutdown", () => {
  it("finishes even though a client keeps its connection open, and refuses calls afterwards", async () => {
    const own = await startTestServer();
    const ownKey = await own.createKey(org);
    const catalogs = createClient(CatalogService, createGrpcTransport({ baseUrl: own.grpcUrl }));
    await catalogs.listCatalogs({ organizationId: org }, { headers: { service_api_key: ownKey } });
    const started = Date.now();
    await own.close();
    // SHUTDOWN_GRACE_MS is 500 in tests: the open session must not hold the close up beyond it.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await codeOf(catalogs.listCatalogs({ organizationId: org }, { headers: { service_api_key: ownKey } }))).toBe(Code.Unavailable);
  });
});
