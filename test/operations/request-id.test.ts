import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CatalogService } from "../../src/gen/vitrine/v1/catalog_service_pb.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

let server: TestServer;
let key: string;
const org = randomUUID();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: "info" }, { captureLogs: true });
  key = await server.createKey(org);
});
afterAll(() => server?.close());

const call = (path: string, headers: Record<string, string> = {}, init: RequestInit = {}) =>
  fetch(server.restUrl + path, { ...init, headers: { SERVICE_API_KEY: key, ...headers } });

describe("x-request-id", () => {
  it("echoes an acceptable incoming id, and the request's log lines carry it", async () => {
    const id = `trace-${randomUUID()}`;
    const response = await call(`/organizations/${org}/catalogs`, { "x-request-id": id });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-request-id")).toBe(id);
    const lines = server.logs.filter((line) => line.reqId === id);
    expect(lines.map((line) => line.msg)).toEqual(["request completed"]);
  });

  it("generates one when none or an unacceptable one is sent", async () => {
    const none = await call(`/organizations/${org}/catalogs`);
    expect(none.headers.get("x-request-id")).toMatch(UUID);
    const tooLong = await call(`/organizations/${org}/catalogs`, { "x-request-id": "a".repeat(129) });
    expect(tooLong.headers.get("x-request-id")).toMatch(UUID);
    const unsafe = await call(`/organizations/${org}/catalogs`, { "x-request-id": "a b;c" });
    expect(unsafe.headers.get("x-request-id")).toMatch(UUID);
    expect(new Set([none, tooLong, unsafe].map((r) => r.headers.get("x-request-id"))).size).toBe(3);
  });

  it("is on every kind of response: errors, unknown routes, operations routes, Connect, gRPC", async () => {
    const unauthenticated = await fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { "x-request-id": "e-401" } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("x-request-id")).toBe("e-401");
    const unknown = await call("/no/such/route", { "x-request-id": "e-404" });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("x-request-id")).toBe("e-404");
    expect((await fetch(`${server.restUrl}/healthz`)).headers.get("x-request-id")).toMatch(UUID);
    const badBody = await call(`/organizations/${org}/catalogs`, { "content-type": "application/json", "x-request-id": "e-400" }, { method: "POST", body: "{" });
    expect(badBody.status).toBe(400);
    expect(badBody.headers.get("x-request-id")).toBe("e-400");

    for (const transport of [
      createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: server.grpcUrl }),
    ]) {
      let responseId: string | null = null;
      await createClient(CatalogService, transport).listCatalogs(
        { organizationId: org },
        { headers: { service_api_key: key, "x-request-id": "rpc-id-1" }, onHeader: (h) => (responseId = h.get("x-request-id")) },
      );
      expect(responseId).toBe("rpc-id-1");
    }
  });
});

describe("logs", () => {
  it("never contain an API key, valid or not", async () => {
    const bogus = `vtr_abcdefghijkl_${"x".repeat(40)}`;
    await call(`/organizations/${org}/catalogs`, { "x-request-id": "with-key" });
    await fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: bogus, "x-request-id": "with-bogus-key" } });
    await createClient(CatalogService, createGrpcTransport({ baseUrl: server.grpcUrl })).listCatalogs(
      { organizationId: org },
      { headers: { service_api_key: key } },
    );
    expect(server.logs.some((line) => line.reqId === "with-key")).toBe(true);
    expect(server.logs.some((line) => line.reqId === "with-bogus-key")).toBe(true);

    const everything = JSON.stringify(server.logs);
    const secret = key.split("_").pop()!;
    expect(secret.length).toBeGreaterThanOrEqual(40);
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(server.adminKey);
    expect(everything).not.toContain("x".repeat(40));
  });

  it("leave the key out even where code logs a request with its headers", async () => {
    // The service's logger, as every request's child logger uses it: Fastify's request serializer
    // keeps no headers, and the key headers are redacted underneath.
    server.app.rest.log.info({ req: { method: "GET", url: "/x", headers: { service_api_key: key, authorization: `Bearer ${key}` } } }, "headers probe");
    const probe = server.logs.find((line) => line.msg === "headers probe");
    expect(probe).toMatchObject({ req: { method: "GET", url: "/x" } });
    expect(JSON.stringify(probe)).not.toContain(key);
  });
});
