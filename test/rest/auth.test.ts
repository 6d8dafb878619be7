import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

let server: TestServer;
let admin: RestClient;
const orgA = randomUUID();
const orgB = randomUUID();
let a: RestClient;
let b: RestClient;
let catalogA: string;
let catalogB: string;

beforeAll(async () => {
  server = await startTestServer();
  admin = restClient(server.restUrl, server.adminKey);
  a = restClient(server.restUrl, await server.createKey(orgA));
  b = restClient(server.restUrl, await server.createKey(orgB));
  catalogA = (await a.post(`/organizations/${orgA}/catalogs`, { name: "A" })).body.id;
  catalogB = (await b.post(`/organizations/${orgB}/catalogs`, { name: "B" })).body.id;
  await a.post(`/organizations/${orgA}/catalogs/${catalogA}/products`, [{ id: "pa", imageUrl: "https://x.example/a.jpg" }]);
  await b.post(`/organizations/${orgB}/catalogs/${catalogB}/products`, [{ id: "pb", imageUrl: "https://x.example/b.jpg" }]);
});
afterAll(() => server?.close());

/** Every documented route of organization `org`, with a plausible body. */
function routes(org: string, catalog: string): [string, string, unknown?][] {
  const c = `/organizations/${org}/catalogs`;
  return [
    ["POST", c, { name: `n-${randomUUID()}` }],
    ["GET", c],
    ["GET", `${c}/${catalog}`],
    ["PUT", `${c}/${catalog}`, { description: "changed" }],
    ["POST", `${c}/${catalog}/products`, [{ id: "new", imageUrl: "https://x.example/n.jpg" }]],
    ["GET", `${c}/${catalog}/products`],
    ["GET", `${c}/${catalog}/products/pb`],
    ["PUT", `${c}/${catalog}/products/pb/rank`, { rank: "BOOST" }],
    ["DELETE", `${c}/${catalog}/products/pb`],
    ["DELETE", `${c}/${catalog}/products`, ["pb"]],
    ["DELETE", `${c}/${catalog}`],
    ["POST", "/search", { organizationId: org, catalogId: catalog, query: "x", topK: 5, visual_weight: 0.5, similarity_threshold: 0 }],
    ["POST", "/recs", { organizationId: org, catalogId: catalog, productId: "pb", topK: 5 }],
    ["POST", `/organizations/${org}/keys`, { name: "k", scopes: ["read"] }],
    ["GET", `/organizations/${org}/keys`],
  ];
}

describe("authentication", () => {
  it.each(routes(orgA, randomUUID()))("%s %s without a key is 401", async (method, url, body) => {
    const res = await restClient(server.restUrl, undefined).call(method, url, body);
    expectErrorObject(res, 401, method, url);
    expect(res.body.message).toMatch(/SERVICE_API_KEY/);
  });

  it("refuses unknown and malformed keys with 401", async () => {
    const url = `/organizations/${orgA}/catalogs`;
    for (const key of ["nope", "vtr_aaaaaaaaaaaa_" + "A".repeat(40), server.adminKey + "x"]) {
      expectErrorObject(await restClient(server.restUrl, key).get(url), 401, "GET", url);
    }
  });

  it("accepts the header in any case", async () => {
    const key = await server.createKey(orgA, ["read"]);
    const res = await fetch(`${server.restUrl}/organizations/${orgA}/catalogs`, { headers: { service_api_key: key } });
    expect(res.status).toBe(200);
  });
});

describe("tenant isolation", () => {
  it.each(routes(orgB, "CATALOG_B"))("a key of organization A gets 403 on B's %s %s", async (method, template, body) => {
    const url = template.replaceAll("CATALOG_B", catalogB);
    const res = await a.call(method, url, body === undefined ? undefined : JSON.parse(JSON.stringify(body).replaceAll("CATALOG_B", catalogB)));
    expectErrorObject(res, 403, method, url);
  });

  it("B's data is untouched after A's attempts", async () => {
    const products = await b.get(`/organizations/${orgB}/catalogs/${catalogB}/products`);
    expect(products.body.data.map((p: any) => [p.id, p.rank])).toEqual([["pb", "NO_BOOST"]]);
    expect((await b.get(`/organizations/${orgB}/catalogs/${catalogB}`)).body.description).toBe("");
    expect((await b.get(`/organizations/${orgB}/catalogs`)).body).toHaveLength(1);
  });

  it("B's catalog is not found through A's own organization path", async () => {
    for (const [method, url, body] of routes(orgA, catalogB).slice(2, 11)) {
      const res = await a.call(method, url, body);
      expectErrorObject(res, 404, method, url);
    }
  });

  it("each organization lists only its own catalogs", async () => {
    const listA = (await a.get(`/organizations/${orgA}/catalogs`)).body;
    expect(listA.every((c: any) => c.organizationId === orgA)).toBe(true);
    expect(listA.some((c: any) => c.id === catalogB)).toBe(false);
  });
});

describe("scopes", () => {
  it("a read-only key reads but cannot write or search", async () => {
    const reader = restClient(server.restUrl, await server.createKey(orgA, ["read"]));
    const c = `/organizations/${orgA}/catalogs`;
    expect((await reader.get(`${c}/${catalogA}/products`)).status).toBe(200);
    const writes: [string, string, unknown?][] = [
      ["POST", c, { name: "no" }],
      ["PUT", `${c}/${catalogA}/products/pa/rank`, { rank: "BOOST" }],
      ["DELETE", `${c}/${catalogA}/products`],
      ["POST", "/search", { organizationId: orgA, catalogId: catalogA, query: "x", topK: 1, visual_weight: 1, similarity_threshold: 0 }],
    ];
    for (const [method, url, body] of writes) {
      const res = await reader.call(method, url, body);
      expectErrorObject(res, 403, method, url);
      expect(res.body.message).toMatch(/scope/);
    }
    expect((await a.get(`${c}/${catalogA}/products`)).body.pagination.total_items).toBe(1);
  });

  it("organization keys cannot manage keys, even their own organization's", async () => {
    const url = `/organizations/${orgA}/keys`;
    expectErrorObject(await a.post(url, { name: "x", scopes: ["read"] }), 403, "POST", url);
    expectErrorObject(await a.get(url), 403, "GET", url);
  });
});

describe("key management", () => {
  it("creates a key (secret shown once), lists it without the secret, and revokes it", async () => {
    const org = randomUUID();
    const created = await admin.post(`/organizations/${org}/keys`, { name: "ci", scopes: ["read", "search"] });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^vtr_[a-z0-9]{12}_[A-Za-z0-9]{40}$/);
    expect(created.body.apiKey).toMatchObject({ organizationId: org, name: "ci", scopes: ["read", "search"] });
    const keyId = created.body.apiKey.id;

    const listed = await admin.get(`/organizations/${org}/keys`);
    expect(listed.body.keys).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key.slice(-40));

    const user = restClient(server.restUrl, created.body.key);
    expect((await user.get(`/organizations/${org}/catalogs`)).status).toBe(200);

    const revoked = await admin.delete(`/organizations/${org}/keys/${keyId}`);
    expect(revoked.body).toEqual({ status: "success", message: expect.stringContaining(keyId) });
    expectErrorObject(await user.get(`/organizations/${org}/catalogs`), 401, "GET", `/organizations/${org}/catalogs`);
    expect((await admin.get(`/organizations/${org}/keys`)).body.keys[0].revokedAt).toBeDefined();
    const elsewhere = `/organizations/${randomUUID()}/keys/${keyId}`;
    expectErrorObject(await admin.delete(elsewhere), 404, "DELETE", elsewhere);
  });

  it("refuses unknown scopes, no scopes and past expiry with 400; an expired key is 401", async () => {
    const url = `/organizations/${orgA}/keys`;
    expectErrorObject(await admin.post(url, { name: "x", scopes: ["root"] }), 400, "POST", url);
    expectErrorObject(await admin.post(url, { name: "x", scopes: [] }), 400, "POST", url);
    expectErrorObject(await admin.post(url, { scopes: ["read"], expiresAt: "2001-01-01T00:00:00Z" }), 400, "POST", url);
    const soon = new Date(Date.now() + 1500).toISOString();
    const created = await admin.post(url, { scopes: ["read"], expiresAt: soon });
    expect(created.status).toBe(201);
    const user = restClient(server.restUrl, created.body.key);
    expect((await user.get(`/organizations/${orgA}/catalogs`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    const res = await user.get(`/organizations/${orgA}/catalogs`);
    expectErrorObject(res, 401, "GET", `/organizations/${orgA}/catalogs`);
    expect(res.body.message).toMatch(/expired/);
  });

  it("stores only a hash of the secret", async () => {
    const created = await admin.post(`/organizations/${orgA}/keys`, { name: "h", scopes: ["read"] });
    const [rows] = await server.app.mysql.pool.query("SELECT secret_hash FROM api_keys WHERE id = ?", [created.body.apiKey.id]);
    const hash = (rows as { secret_hash: string }[])[0]!.secret_hash;
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(created.body.key).not.toContain(hash);
  });
});
