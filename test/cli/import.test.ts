import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient } from "../support/rest-client.js";
import type { RestClient } from "../support/rest-client.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

const run = promisify(execFile);
let server: TestServer;
let api: RestClient;
let key: string;
let dir: string;
const org = randomUUID();

beforeAll(async () => {
  server = await startTestServer();
  key = await server.createKey(org);
  api = restClient(server.restUrl, key);
  dir = mkdtempSync(join(tmpdir(), "vitrine-import-"));
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function cli(...args: string[]) {
  return run("node_modules/.bin/tsx", ["src/apps/cli/main.ts", ...args, "--url", server.restUrl], {
    env: { ...process.env, VITRINE_API_KEY: key, ADMIN_API_KEY: server.adminKey },
  });
}

async function newCatalog(name: string): Promise<string> {
  return (await api.post(`/organizations/${org}/catalogs`, { name })).body.id as string;
}

describe("vitrine import", () => {
  it("loads a JSONL file in batches, reporting each refused row and keeping the rest of its batch", async () => {
    const catalogId = await newCatalog("jsonl");
    const lines = Array.from({ length: 25 }, (_, i) =>
      JSON.stringify({ id: `sku-${i}`, imageUrl: `https://images.example/${i}.jpg`, descriptor: `Item ${i}`, metadata: { n: i } }),
    );
    lines[7] = JSON.stringify({ id: "sku-7", imageUrl: "ftp://nope/7.jpg" });
    lines[12] = "{not json";
    lines[18] = JSON.stringify({ id: "bad id!", imageUrl: "https://images.example/x.jpg" });
    const file = join(dir, "products.jsonl");
    writeFileSync(file, lines.join("\n") + "\n");

    const failed = await cli("import", "--org", org, "--catalog", catalogId, "--file", file, "--batch", "10").then(
      () => undefined,
      (error: { code: number; stdout: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toMatch(/^22 of 25 products accepted into catalog .*; 3 failed:/m);
    expect(failed?.stdout).toMatch(/row 8 \(sku-7\): imageUrl must be an http or https URL/);
    expect(failed?.stdout).toMatch(/row 13: not JSON/);
    expect(failed?.stdout).toMatch(/row 19 \(bad id!\): id may contain only/);

    const listed = await api.get(`/organizations/${org}/catalogs/${catalogId}/products?page_size=100`);
    expect(listed.body.pagination.total_items).toBe(22);
    const product = (await api.get(`/organizations/${org}/catalogs/${catalogId}/products/sku-3`)).body;
    expect(product).toMatchObject({ descriptor: "item 3", metadata: { n: 3 }, status: "PROCESSING" });
  });

  it("loads a CSV file: extra columns become metadata, a metadata column is merged", async () => {
    const catalogId = await newCatalog("csv");
    const file = join(dir, "products.csv");
    writeFileSync(
      file,
      ["id,image_url,descriptor,colour,metadata", 'a,https://images.example/a.jpg,"Red, with a comma",red,"{""price"":10}"', "b,https://images.example/b.jpg,Blue,blue,"].join("\n"),
    );
    const out = await cli("import", "--org", org, "--catalog", catalogId, "--file", file);
    expect(out.stdout).toMatch(/^2 of 2 products accepted/);
    const a = (await api.get(`/organizations/${org}/catalogs/${catalogId}/products/a`)).body;
    expect(a).toMatchObject({ descriptor: "red, with a comma", metadata: { colour: "red", price: 10 } });

    const listed = (await cli("catalogs", "list", "--org", org)).stdout;
    expect(listed).toMatch(new RegExp(`${catalogId}\\s+PROCESSING\\s+2\\s+csv`));
    const status = JSON.parse((await cli("catalogs", "status", "--org", org, "--catalog", catalogId)).stdout);
    expect(status).toEqual({ status: "PROCESSING", total: 2, processing: 2, processed: 0, error: 0, textImageMap: { trainedOn: 0 } });
  });

  it("types CSV cells: numbers and booleans inferred, a header's :type fixes a column", async () => {
    const catalogId = await newCatalog("typed");
    const file = join(dir, "typed.csv");
    writeFileSync(
      file,
      [
        "id,imageUrl,descriptor,price,on_sale,zip,size:string,stock:number,big",
        "t1,https://images.example/1.jpg,One,40,true,01234,42,7,9007199254740993",
        "t2,https://images.example/2.jpg,Two,9.5,False,,M,-3,1e3",
        "t3,https://images.example/3.jpg,Three,80,false,x,L,many,0",
      ].join("\n"),
    );
    const failed = await cli("import", "--org", org, "--catalog", catalogId, "--file", file).catch((error: { code: number; stdout: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stdout: string }).stdout).toMatch(/row 3: column stock: "many" is not a number/);
    const metadataOf = async (id: string) => (await api.get(`/organizations/${org}/catalogs/${catalogId}/products/${id}`)).body.metadata;
    expect(await metadataOf("t1")).toEqual({ price: 40, on_sale: true, zip: "01234", size: "42", stock: 7, big: "9007199254740993" });
    expect(await metadataOf("t2")).toEqual({ price: 9.5, on_sale: "False", zip: "", size: "M", stock: -3, big: 1000 });
  });

  it("explains what it needs", async () => {
    await expect(cli("import", "--org", org, "--catalog", randomUUID())).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--file is required[\s\S]*vitrine import --org/),
    });
    expect((await cli("import", "--help")).stdout).toMatch(/CSV: a header row/);
    expect((await cli("catalogs", "--help")).stdout).toMatch(/vitrine catalogs reindex/);
  });
});
