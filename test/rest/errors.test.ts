import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

// Errors the gateway itself answers, before or around the RPC: each is the documented Error object.
let server: TestServer;
let api: RestClient;
const org = randomUUID();
let catalog: string;

beforeAll(async () => {
  server = await startTestServer();
  api = restClient(server.restUrl, await server.createKey(org));
  catalog = `/organizations/${org}/catalogs/${(await api.post(`/organizations/${org}/catalogs`, { name: "e" })).body.id}`;
});
afterAll(() => server?.close());

describe("gateway errors", () => {
  it("answers 404 for an unknown route, even with a bad body", async () => {
    expectErrorObject(await api.get("/nowhere"), 404, "GET", "/nowhere");
    expectErrorObject(await api.post("/nowhere?x=1", "{bad"), 404, "POST", "/nowhere?x=1");
  });

  it("answers 405 with Allow for a known path and another method", async () => {
    const res = await api.call("PATCH", catalog, { name: "x" });
    expectErrorObject(res, 405, "PATCH", catalog);
    expect(res.headers.get("allow")).toMatch(/GET/);
  });

  it("answers 415 for a body that is not JSON", async () => {
    const url = `/organizations/${org}/catalogs`;
    const res = await api.call("POST", url, "name=x", { "content-type": "application/x-www-form-urlencoded" });
    expectErrorObject(res, 415, "POST", url);
  });

  it("answers 400 naming the problem for malformed JSON, wrong types and unknown fields", async () => {
    const url = `${catalog}/products`;
    const cases: [string, RegExp][] = [
      ['[{"id": "a",', /not valid JSON/],
      ['[{"id": "a", "imageUrl": "https://x/y.jpg", "colour": "red"}]', /unknown field "products\[0\]\.colour"/],
      ['[{"id": 7, "imageUrl": "https://x/y.jpg"}]', /id/],
      ['{"id": "a"}', /array/],
    ];
    for (const [body, message] of cases) {
      const res = await api.post(url, body);
      expectErrorObject(res, 400, "POST", url);
      expect(res.body.message).toMatch(message);
    }
  });

  it("answers 400 for search parameters of the wrong type", async () => {
    const res = await api.post("/search", { organizationId: org, catalogId: randomUUID(), query: "x", topK: "many" });
    expectErrorObject(res, 400, "POST", "/search");
    expect(res.body.message).toMatch(/topK/);
  });

  it("answers 400 in the Error object for malformed percent-encoding in the path", async () => {
    const url = `${catalog}/products/%E0%A4%A`;
    expectErrorObject(await api.get(url), 400, "GET", url);
  });

  it("answers 500 with a generic message for a real fault, and recovers", async () => {
    // A genuine database failure: the products table disappears under the running service.
    const url = `${catalog}/products`;
    await server.app.mysql.pool.query("RENAME TABLE products TO products_away");
    try {
      const res = await api.get(url);
      expectErrorObject(res, 500, "GET", url);
      expect(res.body.message).toBe("internal server error");
    } finally {
      await server.app.mysql.pool.query("RENAME TABLE products_away TO products");
    }
    expect((await api.get(url)).status).toBe(200);
  });
});
