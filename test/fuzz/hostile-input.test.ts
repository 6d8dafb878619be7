// Property-based hostile input against the real service, through every door: REST (every route
// of the protos' HTTP annotations), Connect (client and raw JSON), gRPC, and raw HTTP bytes.
// For every generated request: no 5xx (no INTERNAL/UNKNOWN/UNAVAILABLE), every REST error is
// the Error object, and a refused request changes nothing in MySQL. At least 2,000 requests per
// run; FUZZ_SEED=<n> replays a run, FUZZ_SCALE=<x> multiplies the counts. Generators:
// hostile-generators.ts.
import { randomUUID } from "node:crypto";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readHttpBindings } from "../../gateway/http-rules.js";
import { httpSuccessStatusOf, SERVICES } from "../../src/rpc/index.js";
import { rawRequest } from "../support/raw-http.js";
import { restClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { hostileRawRequest, hostileRestRequest, keyChoice, mutatedMessage } from "./hostile-generators.js";
import type { KeyChoice, KnownIds } from "./hostile-generators.js";

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const RUNS = { rest: 1300, connect: 250, connectRaw: 200, grpc: 300, raw: 60 };
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const options = (numRuns: number) => ({ numRuns: runs(numRuns), ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true });

// Codes a well-behaved service may answer to a bad request; anything else is a fault.
const CLIENT_CODES = new Set([
  Code.InvalidArgument,
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.NotFound,
  Code.AlreadyExists,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.ResourceExhausted,
  Code.Aborted,
]);
const CONNECT_CLIENT_CODES = new Set(["invalid_argument", "unauthenticated", "permission_denied", "not_found", "already_exists", "failed_precondition", "out_of_range", "resource_exhausted", "aborted"]);

const BAD_KEYS = new Set<KeyChoice>(["missing", "garbage", "wrong-secret"]);

let server: TestServer;
let known: KnownIds;
const keys = {} as Record<KeyChoice, string | undefined>;
let sent = 0;
// Answers by REST operation and status class, printed at the end: how deep the generated calls got.
const depth = new Map<string, Record<string, number>>();

beforeAll(async () => {
  server = await startTestServer();
  const org = randomUUID();
  const other = randomUUID();
  const admin = restClient(server.restUrl, server.adminKey);
  const catalogId = (await admin.post(`/organizations/${org}/catalogs`, { name: "fuzz" })).body.id as string;
  const created = await admin.post(`/organizations/${org}/catalogs/${catalogId}/products`, [
    { id: "p1", imageUrl: "https://images.example.invalid/p1.jpg", descriptor: "a red dress", metadata: { colour: "red", price: 10 } },
  ]);
  expect(created.status).toBe(202);
  const spareCatalogId = (await admin.post(`/organizations/${org}/catalogs`, { name: "fuzz spare" })).body.id as string;
  known = { organizationId: org, otherOrganizationId: other, catalogId, spareCatalogId, productId: "p1" };
  const valid = await server.createKey(org);
  Object.assign(keys, {
    valid,
    admin: server.adminKey,
    "other-organization": await server.createKey(other),
    "read-only": await server.createKey(org, ["read"]),
    missing: undefined,
    garbage: "not a key at all \u00e9",
    "wrong-secret": valid.replace(/_[^_]+$/, `_${"0".repeat(40)}`),
  });
}, 60_000);

afterAll(async () => {
  console.log(`hostile-input: ${sent} requests sent`);
  console.log(`REST answers by operation: ${[...depth].map(([op, counts]) => `${op} ${JSON.stringify(counts)}`).join("; ")}`);
  await server?.close();
});

// What a refused request must leave alone. The index queue and search log are left out: the
// first drains and the second fills behind successful calls, on their own time.
const TABLES = ["catalogs", "products", "product_embeddings", "api_keys", "catalog_text_maps"];
async function fingerprint(): Promise<string> {
  const [rows] = await server.app.mysql.pool.query(`CHECKSUM TABLE ${TABLES.join(", ")}`);
  return JSON.stringify(rows);
}

/** Runs `send`; when it reports a refusal, MySQL must be as it was before. */
async function expectRefusalChangesNothing(send: () => Promise<boolean>, what: () => string): Promise<void> {
  const before = await fingerprint();
  const refused = await send();
  sent++;
  if (refused) expect(await fingerprint(), `refused request changed data: ${what()}`).toBe(before);
}

describe("hostile input (property-based)", () => {
  it("REST: never 5xx, the Error object on every error, refusals change nothing", { timeout: 300_000 }, async () => {
    const bindings = readHttpBindings(SERVICES, httpSuccessStatusOf);
    await fc.assert(
      fc.asyncProperty(hostileRestRequest(bindings, known), async (request) => {
        const describe = () => `${request.method} ${request.url.slice(0, 300)} key=${request.key} body=${String(request.body.text).slice(0, 300)}`;
        await expectRefusalChangesNothing(async () => {
          const headers: Record<string, string> = {};
          const key = keys[request.key];
          if (key !== undefined) headers.SERVICE_API_KEY = key;
          if (request.body.contentType !== undefined) headers["content-type"] = request.body.contentType;
          const hasBody = request.body.text !== undefined && request.method !== "GET";
          const response = await fetch(server.restUrl + request.url, { method: request.method, headers, ...(hasBody ? { body: request.body.text } : {}) });
          const text = await response.text();
          const counts = depth.get(request.binding.method.name) ?? {};
          const statusClass = response.status < 400 ? "ok" : String(response.status);
          counts[statusClass] = (counts[statusClass] ?? 0) + 1;
          depth.set(request.binding.method.name, counts);
          expect(response.status, `${response.status} ${text.slice(0, 300)} for ${describe()}`).toBeLessThan(500);
          if (response.status < 400) return false;
          const body = JSON.parse(text) as Record<string, unknown>;
          expect(Object.keys(body).sort(), describe()).toEqual(["message", "method", "status", "time", "url"]);
          expect(body.status).toBe(response.status);
          expect(body.method).toBe(request.method);
          expect(typeof body.url).toBe("string");
          if (BAD_KEYS.has(request.key)) {
            // The key comes first: whatever else is wrong, a bad key is 401 (404/405 for URLs no
            // route serves; 414/431 when the HTTP parser refuses the request head itself).
            expect([401, 404, 405, 414, 431], describe()).toContain(response.status);
          }
          return true;
        }, describe);
      }),
      options(RUNS.rest),
    );
  });

  const unary = SERVICES.flatMap((service) => service.methods.filter((m): m is DescMethodUnary => m.methodKind === "unary"));
  // A function: `known` is filled in by beforeAll, after the tests are collected.
  const rpcRequest = () => fc.record({ method: fc.constantFrom(...unary), key: keyChoice }).chain(({ method, key }) =>
    mutatedMessage(method, known).map((message) => ({ method, key, message })),
  );

  async function callRpc(transport: Transport, request: { method: DescMethodUnary; key: KeyChoice; message: Record<string, unknown> }): Promise<boolean> {
    const key = keys[request.key];
    const client = createClient(request.method.parent, transport) as unknown as Record<string, (m: unknown, o: unknown) => Promise<unknown>>;
    try {
      await client[request.method.localName]!(request.message, { headers: key === undefined ? {} : { service_api_key: key } });
      return false;
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (BAD_KEYS.has(request.key)) expect(Code[code], `key first: ${request.method.name}`).toBe("Unauthenticated");
      expect(CLIENT_CODES.has(code), `${Code[code]} (${ConnectError.from(error).rawMessage.slice(0, 200)}) for ${request.method.name}`).toBe(true);
      return true;
    }
  }

  it("Connect: no INTERNAL, UNKNOWN or UNAVAILABLE; refusals change nothing", { timeout: 300_000 }, async () => {
    const transport = createConnectTransport({ baseUrl: server.restUrl, httpVersion: "1.1" });
    await fc.assert(
      fc.asyncProperty(rpcRequest(), (request) => expectRefusalChangesNothing(() => callRpc(transport, request), () => request.method.name)),
      options(RUNS.connect),
    );
  });

  it("Connect, raw JSON bodies: no 5xx, a Connect error body on every error", { timeout: 300_000 }, async () => {
    const body = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ unit: "binary", maxLength: 80 }),
      fc.integer({ min: 500, max: 20_000 }).map((n) => `{"organizationId":${"[".repeat(n)}${"]".repeat(n)}}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...unary), keyChoice, body, async (method, keyName, text) => {
        await expectRefusalChangesNothing(async () => {
          const key = keys[keyName];
          const response = await fetch(`${server.restUrl}/${method.parent.typeName}/${method.name}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(key === undefined ? {} : { service_api_key: key }) },
            body: text,
          });
          const answer = await response.text();
          expect(response.status, `${response.status} ${answer.slice(0, 200)} for ${method.name} ${text.slice(0, 200)}`).toBeLessThan(500);
          if (response.status < 400) return false;
          const code = (JSON.parse(answer) as { code?: string }).code ?? "";
          expect(CONNECT_CLIENT_CODES.has(code), `${code} for ${method.name}`).toBe(true);
          if (BAD_KEYS.has(keyName)) expect(code, `key first: ${method.name} ${text.slice(0, 100)}`).toBe("unauthenticated");
          return true;
        }, () => `${method.name} ${text.slice(0, 200)}`);
      }),
      options(RUNS.connectRaw),
    );
  });

  it("gRPC: no INTERNAL, UNKNOWN or UNAVAILABLE; refusals change nothing", { timeout: 300_000 }, async () => {
    const transport = createGrpcTransport({ baseUrl: server.grpcUrl });
    await fc.assert(
      fc.asyncProperty(rpcRequest(), (request) => expectRefusalChangesNothing(() => callRpc(transport, request), () => request.method.name)),
      options(RUNS.grpc),
    );
  });

  it("raw HTTP: malformed request lines and oversize heads get a 4xx Error object", { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(hostileRawRequest, async (bytes) => {
        const response = await rawRequest(server.restUrl, bytes);
        sent++;
        const what = JSON.stringify(bytes.subarray(0, 80).toString("latin1"));
        expect(response.status, what).toBeGreaterThanOrEqual(200);
        expect(response.status, what).toBeLessThan(500);
        if (response.status >= 400) {
          const body = JSON.parse(response.body) as Record<string, unknown>;
          expect(Object.keys(body).sort(), `${what}: ${response.body.slice(0, 200)}`).toEqual(["message", "method", "status", "time", "url"]);
          expect(body.status).toBe(response.status);
        }
      }),
      options(RUNS.raw),
    );
  });

  it("sent at least 2,000 requests", () => {
    if (SCALE >= 1) expect(sent).toBeGreaterThanOrEqual(2000);
  });
});
