import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorObject, restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

let server: TestServer;
let api: RestClient;
const org = randomUUID();

beforeAll(async () => {
  server = await startTestServer({ MAX_REQUEST_BYTES: String(256 * 1024), MAX_BATCH_SIZE: "50" });
  api = restClient(server.restUrl, await server.createKey(org));
});
afterAll(() => server?.close());

async function newCatalog(): Promise<string> {
  const res = await api.post(`/organizations/${org}/catalogs`, { name: `c-${randomUUID()}` });
  return `/organizations/${org}/catalogs/${res.body.id}`;
}

const product = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  imageUrl: `https://img.example/${id}.jpg`,
  descriptor: `Product ${id.toUpperCase()}`,
  metadata: { colour: "red", size: 42 },
  ...extra,
});

const idsOf = (res: { body: { data: { id: string }[] } }) => res.body.data.map((p) => p.id);

describe("Create Products", () => {
  it("accepts a batch with 202 and the acknowledgement, stores descriptors lowercased", async () => {
    const catalog = await newCatalog();
    const catalogId = catalog.split("/").pop();
    const res = await api.post(`${catalog}/products`, [product("sku-1", { catalogId }), product("sku-2")]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: "success", message: expect.any(String), count: 2 });

    const got = await api.get(`${catalog}/products/sku-1`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: "sku-1",
      catalogId,
      imageUrl: "https://img.example/sku-1.jpg",
      objectUrl: "",
      descriptor: "product sku-1",
      metadata: { colour: "red", size: 42 },
      createAt: expect.stringMatching(/Z$/),
      status: "PROCESSING",
      rank: "NO_BOOST",
      updateAt: expect.stringMatching(/Z$/),
    });
  });

  it("stores quotes, backslashes, placeholders and any script in every field exactly as sent", async () => {
    const catalog = await newCatalog();
    const tricky = `it's a "robe" \\ d'été? ?? :name \u00e9 ✓ 中文 😀 ' OR 1=1 --`;
    const metadata = { [`key ? ${tricky}`]: tricky, nested: { list: [tricky, 1.5, null, true] }, empty: "" };
    const url = `https://img.example/a?b=1&c='d'`;
    const before = Date.now();
    const res = await api.post(`${catalog}/products`, [product("sku-q1", { imageUrl: url, descriptor: tricky, metadata })]);
    expect(res.status).toBe(202);
    const got = await api.get(`${catalog}/products/sku-q1`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: "sku-q1", imageUrl: url, descriptor: tricky.toLowerCase(), metadata });
    // Stored in UTC: read back within the request's second.
    expect(Math.abs(Date.parse(got.body.createAt) - before)).toBeLessThan(5000);
  });

  it("replaces a product whose id is already in the catalog, keeping its rank and creation time", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [product("sku-1")]);
    await api.put(`${catalog}/products/sku-1/rank`, { rank: "BOOST" });
    const before = (await api.get(`${catalog}/products/sku-1`)).body;
    const res = await api.post(`${catalog}/products`, [product("sku-1", { descriptor: "New Text", metadata: { v: 2 } })]);
    expect(res.body.count).toBe(1);
    const after = (await api.get(`${catalog}/products/sku-1`)).body;
    expect(after).toMatchObject({ descriptor: "new text", metadata: { v: 2 }, rank: "BOOST", createAt: before.createAt });
    expect((await api.get(catalog)).body.productCount).toBe(1);
  });

  it("rejects the whole batch when one item is bad, naming index, field and reason, and writes nothing", async () => {
    const catalog = await newCatalog();
    const url = `${catalog}/products`;
    const cases: [unknown[], RegExp][] = [
      [[product("a"), product("b", { imageUrl: "not a url" })], /^products\[1\]\.imageUrl is not a valid URL/],
      [[product("a"), product("b", { imageUrl: "" })], /^products\[1\]\.imageUrl is required/],
      [[product("a"), product("a")], /^products\[1\]\.id repeats the id of products\[0\]/],
      [[product("a"), product("bad id")], /^products\[1\]\.id may contain only/],
      [[product("a", { catalogId: randomUUID() })], /^products\[0\]\.catalogId .* does not match/],
      [[product("a", { descriptor: "x".repeat(10_001) })], /^products\[0\]\.descriptor must be at most 10000/],
      [[], /empty/],
      [Array.from({ length: 51 }, (_, i) => product(`p${i}`)), /at most 50 are accepted/],
    ];
    for (const [body, message] of cases) {
      const res = await api.post(url, body);
      expectErrorObject(res, 400, "POST", url);
      expect(res.body.message).toMatch(message);
    }
    for (const body of [[{ ...product("a"), price: 3 }], { id: "a" }, [{ ...product("a"), metadata: [1, 2] }]]) {
      expectErrorObject(await api.post(url, body), 400, "POST", url);
    }
    expect((await api.get(`${catalog}/products`)).body.pagination.total_items).toBe(0);
  });

  it("answers 413 in the Error object for a body over the limit, and writes nothing", async () => {
    const catalog = await newCatalog();
    const url = `${catalog}/products`;
    const big = Array.from({ length: 40 }, (_, i) => product(`p${i}`, { descriptor: "x".repeat(9000) }));
    expectErrorObject(await api.post(url, big), 413, "POST", url);
    expect((await api.get(url)).body.pagination.total_items).toBe(0);
  });
});

describe("List Products", () => {
  let catalog: string;
  beforeAll(async () => {
    catalog = await newCatalog();
    const items = Array.from({ length: 25 }, (_, i) =>
      product(`item-${String(i).padStart(2, "0")}`, {
        descriptor: i % 5 === 0 ? `Blue Running Shoe ${i}` : `Plain thing ${i}`,
        metadata: { colour: i % 2 ? "green" : "Crimson", n: i },
      }),
    );
    await api.post(`${catalog}/products`, items);
    await api.put(`${catalog}/products/item-03/rank`, { rank: "SUPER_BOOST" });
  });

  it("paginates with the documented pagination object", async () => {
    const first = await api.get(`${catalog}/products?page=1&page_size=10`);
    expect(first.status).toBe(200);
    expect(first.body.pagination).toEqual({
      total_items: 25,
      total_pages: 3,
      current_page: 1,
      page_size: 10,
      has_next: true,
      has_previous: false,
    });
    const last = await api.get(`${catalog}/products?page=3&page_size=10`);
    expect(last.body.data).toHaveLength(5);
    expect(last.body.pagination).toMatchObject({ current_page: 3, has_next: false, has_previous: true });
    const all = new Set([...idsOf(first), ...idsOf((await api.get(`${catalog}/products?page=2&page_size=10`)))!, ...idsOf(last)]);
    expect(all.size).toBe(25);
    const beyond = await api.get(`${catalog}/products?page=9&page_size=10`);
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.pagination).toMatchObject({ total_items: 25, current_page: 9, has_next: false, has_previous: true });
  });

  it("defaults to page 1 of 20 and accepts page_size 1 and 100", async () => {
    const res = await api.get(`${catalog}/products`);
    expect(res.body.pagination).toMatchObject({ current_page: 1, page_size: 20, total_pages: 2 });
    expect((await api.get(`${catalog}/products?page_size=1`)).body.data).toHaveLength(1);
    expect((await api.get(`${catalog}/products?page_size=100`)).body.data).toHaveLength(25);
  });

  it.each([
    ["page=0", /page must be/],
    ["page=-1", /page must be/],
    ["page_size=0", /page_size must be/],
    ["page_size=101", /page_size must be/],
    ["page=abc", /page/],
    ["rank=HUGE", /rank/],
    ["status=DONE", /status/],
    ["created_after=yesterday", /created_after/],
    ["colour=red", /unknown query parameter/],
  ])("refuses %s with 400", async (query, message) => {
    const url = `${catalog}/products?${query}`;
    const res = await api.get(url);
    expectErrorObject(res, 400, "GET", url);
    expect(res.body.message).toMatch(message);
  });

  it("searches descriptor, URLs and metadata values case-insensitively", async () => {
    expect((await api.get(`${catalog}/products?search=RUNNING`)).body.pagination.total_items).toBe(5);
    expect((await api.get(`${catalog}/products?search=crimson`)).body.pagination.total_items).toBe(13);
    expect(idsOf(await api.get(`${catalog}/products?search=item-07.jpg`))).toEqual(["item-07"]);
    expect((await api.get(`${catalog}/products?search=colour`)).body.pagination.total_items).toBe(0);
    expect((await api.get(`${catalog}/products?search=100%25`)).body.pagination.total_items).toBe(0);
  });

  it("filters by rank, status and creation time", async () => {
    expect(idsOf(await api.get(`${catalog}/products?rank=SUPER_BOOST`))).toEqual(["item-03"]);
    expect((await api.get(`${catalog}/products?rank=NO_BOOST`)).body.pagination.total_items).toBe(24);
    expect((await api.get(`${catalog}/products?status=PROCESSING`)).body.pagination.total_items).toBe(25);
    expect((await api.get(`${catalog}/products?status=ERROR`)).body.pagination.total_items).toBe(0);
    const createdAt = (await api.get(`${catalog}/products/item-00`)).body.createAt as string;
    const before = new Date(Date.parse(createdAt) - 1000).toISOString();
    const after = new Date(Date.parse(createdAt) + 1000).toISOString();
    expect((await api.get(`${catalog}/products?created_after=${before}`)).body.pagination.total_items).toBe(25);
    expect((await api.get(`${catalog}/products?created_before=${before}`)).body.pagination.total_items).toBe(0);
    expect(
      (await api.get(`${catalog}/products?created_after=${before}&created_before=${after}&rank=NO_BOOST`)).body
        .pagination.total_items,
    ).toBe(24);
  });
});

describe("Get, Delete, Rank", () => {
  it("answers 404 for an unknown product and 400 for a malformed id", async () => {
    const catalog = await newCatalog();
    const url = `${catalog}/products/nope`;
    expectErrorObject(await api.get(url), 404, "GET", url);
    expectErrorObject(await api.delete(url), 404, "DELETE", url);
    expectErrorObject(await api.put(`${url}/rank`, { rank: "BOOST" }), 404, "PUT", `${url}/rank`);
    const bad = `${catalog}/products/${"x".repeat(129)}`;
    expectErrorObject(await api.get(bad), 400, "GET", bad);
  });

  it("deletes one product", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [product("a"), product("b")]);
    const res = await api.delete(`${catalog}/products/a`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "success", message: expect.any(String) });
    expect(idsOf(await api.get(`${catalog}/products`))).toEqual(["b"]);
  });

  it("deletes the listed products, counting only those that existed", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, ["a", "b", "c", "d"].map((id) => product(id)));
    const res = await api.delete(`${catalog}/products`, ["a", "c", "zz"]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "success", message: expect.any(String), count: 2 });
    expect(idsOf(await api.get(`${catalog}/products`)).sort()).toEqual(["b", "d"]);
  });

  it.each([
    ["an empty array", []],
    ["no body", undefined],
  ])("deletes every product of the catalog for %s", async (_, body) => {
    const catalog = await newCatalog();
    const other = await newCatalog();
    await api.post(`${catalog}/products`, ["a", "b", "c"].map((id) => product(id)));
    await api.post(`${other}/products`, [product("a")]);
    const res = await api.delete(`${catalog}/products`, body);
    expect(res.body).toMatchObject({ status: "success", count: 3 });
    expect((await api.get(`${catalog}/products`)).body.pagination.total_items).toBe(0);
    expect((await api.get(`${other}/products`)).body.pagination.total_items).toBe(1);
  });

  it("treats an empty body sent with a JSON content type as no body", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [product("a")]);
    const res = await api.call("DELETE", `${catalog}/products`, undefined, { "content-type": "application/json" });
    expect(res.body).toMatchObject({ count: 1 });
  });

  it("sets the rank with {rank} and refuses anything else", async () => {
    const catalog = await newCatalog();
    await api.post(`${catalog}/products`, [product("a")]);
    const url = `${catalog}/products/a/rank`;
    for (const rank of ["BOOST", "SUPER_BOOST", "NO_BOOST", "BOOST"]) {
      const res = await api.put(url, { rank });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: "success", message: expect.stringContaining(rank) });
      expect((await api.get(`${catalog}/products/a`)).body.rank).toBe(rank);
    }
    for (const body of [{ rank: "MEGA" }, {}, { level: "BOOST" }, { rank: "RANK_UNSPECIFIED" }]) {
      expectErrorObject(await api.put(url, body), 400, "PUT", url);
    }
    expect((await api.get(`${catalog}/products/a`)).body.rank).toBe("BOOST");
  });
});
