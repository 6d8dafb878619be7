import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

let server: TestServer;
let api: RestClient;
const org = randomUUID();
const base = `/organizations/${org}/catalogs`;

beforeAll(async () => {
  server = await startTestServer();
  api = restClient(server.restUrl, await server.createKey(org));
});
afterAll(() => server?.close());

const isoTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe("Create Catalog", () => {
  it("returns 201 with exactly the documented fields", async () => {
    const res = await api.post(base, { name: "Shoes", description: "All shoes", organizationId: org });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ["createdAt", "description", "id", "name", "organizationId", "productCount"].sort(),
    );
    expect(res.body).toMatchObject({ name: "Shoes", description: "All shoes", organizationId: org, productCount: 0 });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.createdAt).toMatch(isoTime);
  });

  it("accepts a body without organizationId and a missing description", async () => {
    const res = await api.post(base, { name: "Bare" });
    expect(res.status).toBe(201);
    expect(res.body.description).toBe("");
  });

  it("answers 409 for a name already used by an active catalog of the organization", async () => {
    await api.post(base, { name: "Bags" });
    const res = await api.post(base, { name: "Bags", description: "again" });
    expectErrorObject(res, 409, "POST", base);
    expect(res.body.message).toMatch(/already exists/);
    expectErrorObject(await api.post(base, { name: "  bags " }), 409, "POST", base);
  });

  it.each([
    [{ name: "" }, /name is required/],
    [{ name: "   " }, /name is required/],
    [{ name: "x".repeat(201) }, /at most 200/],
    [{ name: "ok", colour: "red" }, /colour/],
    [{ name: 42 }, /name/],
    [{ name: "ok", organizationId: randomUUID() }, /organizationId/],
  ])("refuses %j with 400", async (body, message) => {
    const before = (await api.get(base)).body.length;
    const res = await api.post(base, body);
    expectErrorObject(res, 400, "POST", base);
    expect(res.body.message).toMatch(message);
    expect((await api.get(base)).body.length).toBe(before);
  });

  it("refuses malformed JSON and a bad organization id with 400", async () => {
    expectErrorObject(await api.post(base, "{not json"), 400, "POST", base);
    const res = await api.post("/organizations/not-a-uuid/catalogs", { name: "x" });
    expectErrorObject(res, 400, "POST", "/organizations/not-a-uuid/catalogs");
    expect(res.body.message).toMatch(/organizationId must be a UUID/);
  });
});

describe("Get, List, Update, Delete Catalog", () => {
  it("gets a catalog without status or updatedAt", async () => {
    const created = (await api.post(base, { name: "Hats", description: "d" })).body;
    const res = await api.get(`${base}/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
  });

  it("lists catalogs as a bare array with status", async () => {
    const created = (await api.post(base, { name: "Listed" })).body;
    const res = await api.get(base);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const entry = res.body.find((c: any) => c.id === created.id);
    expect(entry).toEqual({ ...created, status: "EMPTY" });
  });

  it("updates name and description and returns updatedAt", async () => {
    const created = (await api.post(base, { name: "Before", description: "old" })).body;
    const res = await api.put(`${base}/${created.id}`, { id: created.id, name: "After", organizationId: org });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, name: "After", description: "old", productCount: 0 });
    expect(res.body.updatedAt).toMatch(isoTime);
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
    expect((await api.get(`${base}/${created.id}`)).body.name).toBe("After");
  });

  it("refuses an update to a name in use (409), a mismatched id (400) and an unknown catalog (404)", async () => {
    const a = (await api.post(base, { name: "Taken" })).body;
    const b = (await api.post(base, { name: "Free" })).body;
    expectErrorObject(await api.put(`${base}/${b.id}`, { name: "Taken" }), 409, "PUT", `${base}/${b.id}`);
    expectErrorObject(await api.put(`${base}/${b.id}`, { id: a.id, name: "Z" }), 400, "PUT", `${base}/${b.id}`);
    const unknown = randomUUID();
    expectErrorObject(await api.put(`${base}/${unknown}`, { name: "Z" }), 404, "PUT", `${base}/${unknown}`);
  });

  it("soft-deletes: the catalog is 404 everywhere afterwards and its name is free", async () => {
    const created = (await api.post(base, { name: "Doomed" })).body;
    const path = `${base}/${created.id}`;
    await api.post(`${path}/products`, [{ id: "p1", imageUrl: "https://img.example/1.jpg" }]);
    const res = await api.delete(path);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "success", message: expect.stringContaining(created.id) });

    expectErrorObject(await api.get(path), 404, "GET", path);
    expectErrorObject(await api.put(path, { name: "again" }), 404, "PUT", path);
    expectErrorObject(await api.delete(path), 404, "DELETE", path);
    expectErrorObject(await api.get(`${path}/products`), 404, "GET", `${path}/products`);
    expectErrorObject(await api.get(`${path}/products/p1`), 404, "GET", `${path}/products/p1`);
    expectErrorObject(
      await api.post(`${path}/products`, [{ id: "p2", imageUrl: "https://img.example/2.jpg" }]),
      404,
      "POST",
      `${path}/products`,
    );
    expect((await api.get(base)).body.some((c: any) => c.id === created.id)).toBe(false);
    expect((await api.post(base, { name: "Doomed" })).status).toBe(201);
  });

  it("answers 404 for an unknown catalog and 400 for a malformed catalog id", async () => {
    const unknown = randomUUID();
    expectErrorObject(await api.get(`${base}/${unknown}`), 404, "GET", `${base}/${unknown}`);
    const res = await api.get(`${base}/123`);
    expectErrorObject(res, 400, "GET", `${base}/123`);
    expect(res.body.message).toMatch(/catalogId must be a UUID/);
  });
});

describe("catalog status and productCount", () => {
  it("follow the products: EMPTY, then PROCESSING with an accurate count", async () => {
    const created = (await api.post(base, { name: "Counted" })).body;
    const path = `${base}/${created.id}`;
    const statusOf = async () => (await api.get(base)).body.find((c: any) => c.id === created.id);
    expect(await statusOf()).toMatchObject({ status: "EMPTY", productCount: 0 });
    const items = ["a", "b", "c"].map((id) => ({ id, imageUrl: `https://img.example/${id}.jpg` }));
    await api.post(`${path}/products`, items);
    expect(await statusOf()).toMatchObject({ status: "PROCESSING", productCount: 3 });
    expect((await api.get(path)).body.productCount).toBe(3);
    await api.delete(`${path}/products/a`);
    expect((await api.get(path)).body.productCount).toBe(2);
    await api.delete(`${path}/products`);
    expect(await statusOf()).toMatchObject({ status: "EMPTY", productCount: 0 });
  });
});
