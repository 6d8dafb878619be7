import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { probeMysql, provisionMariadb } from "../../src/provisioning/index.js";
import type { ProvisionedMariadb } from "../../src/provisioning/index.js";
import { resolveMysqlUrl } from "../../src/apps/shared/mysql-url.js";
import { cacheDir } from "../support/cache-dir.js";
import { freePort } from "../support/free-port.js";

// The real thing: MariaDB from PATH (or Debian's build fetched into the shared cache), started on a

const dataDir = mkdtempSync(join(tmpdir(), "vitrine-mariadb-"));
const started: ProvisionedMariadb[] = [];

afterAll(async () => {
  for (const server of started) await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function query<T>(url: string, fn: (c: mysql.Connection) => Promise<T>): Promise<T> {
  const connection = await mysql.createConnection({ uri: url });
  try {
    return await fn(connection);
  } finally {
    await connection.end();
  }
}

describe("provisionMariadb", () => {
  it("starts MariaDB, is reused while it runs, keeps its data across a restart, and stops", { timeout: 120_000 }, async () => {
    const port = await freePort();
    const lines: string[] = [];
    const first = await provisionMariadb({ cacheDir, port, dataDir, log: (l) => lines.push(l) });
    started.push(first);
    expect(first.startedByUs).toBe(true);
    expect(first.url).toBe(`mysql://root@127.0.0.1:${port}/`);
    expect(lines.some((l) => l.includes(`starting`) && l.includes(dataDir))).toBe(true);

    const version = await query(first.url, async (c) => {
      const [rows] = await c.query<mysql.RowDataPacket[]>("SELECT VERSION() AS v");
      await c.query("CREATE DATABASE IF NOT EXISTS provision_test");
      await c.query("CREATE TABLE provision_test.kept (id INT PRIMARY KEY)");
      await c.query("INSERT INTO provision_test.kept VALUES (42)");
      return String(rows[0]?.v);
    });
    expect(version).toMatch(/mariadb/i);
    expect(first.version).toBe(version);

    // A second caller finds it running and starts nothing.
    const again = await provisionMariadb({ cacheDir, port, dataDir });
    expect(again.startedByUs).toBe(false);
    await again.stop();
    expect((await probeMysql("127.0.0.1", port)).kind).toBe("mysql");

    await first.stop();
    expect((await probeMysql("127.0.0.1", port)).kind).toBe("free");

    // Started again on the same folder: the data is still there.
    const restarted = await provisionMariadb({ cacheDir, port, dataDir });
    started.push(restarted);
    expect(restarted.startedByUs).toBe(true);
    const ids = await query(restarted.url, async (c) => {
      const [rows] = await c.query<mysql.RowDataPacket[]>("SELECT id FROM provision_test.kept");
      await c.query("DROP TABLE provision_test.kept");
      await c.query("DROP DATABASE provision_test");
      return rows.map((r) => Number(r.id));
    });
    expect(ids).toEqual([42]);
    await restarted.stop();
    expect((await probeMysql("127.0.0.1", port)).kind).toBe("free");
  });

  it("refuses a port held by something that is not a usable MySQL, saying what to do", async () => {
    const squatter = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const { port } = squatter.address() as AddressInfo;
    try {
      await expect(provisionMariadb({ cacheDir, port, dataDir: join(dataDir, "unused") })).rejects.toThrow(/set MYSQL_URL/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});

describe("resolveMysqlUrl", () => {
  const silent = { info: () => undefined } as unknown as Parameters<typeof resolveMysqlUrl>[1];

  it("uses MYSQL_URL as given and starts nothing", async () => {
    const config = loadConfig({ MYSQL_URL: "mysql://someone:secret@db.invalid:3306/elsewhere", DATA_DIR: join(dataDir, "none") });
    const resolved = await resolveMysqlUrl(config, silent);
    expect(resolved.url).toBe("mysql://someone:secret@db.invalid:3306/elsewhere");
    await resolved.stop();
  });
});
