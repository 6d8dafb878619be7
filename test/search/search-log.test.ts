// The search log against the machine's MariaDB, in a database of its own: more rows than one
// INSERT takes are written in several, every column arrives as recorded (unicode, JSON filters,
// nulls, millisecond UTC times), and a row the server refuses drops its batch with one short log
// line that carries none of the values.
import { randomUUID } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/index.js";
import type { SearchLogEntry } from "../../src/search/index.js";
import { MysqlSearchLog, openMysql } from "../../src/storage/mysql/index.js";
import type { MysqlConnection } from "../../src/storage/mysql/index.js";
import { searchLog } from "../../src/storage/mysql/schema.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "../support/scratch-mysql.js";

const url = scratchDatabaseUrl();
let db: MysqlConnection;

beforeAll(async () => {
  db = await openMysql(url);
}, 60_000);
afterAll(async () => {
  await db?.close();
  await dropScratchDatabase(url);
});

function entry(catalogId: string, i: number): SearchLogEntry {
  const search = i % 3 !== 0;
  return {
    organizationId: "0b7f7b8e-8b0e-4b7e-9b7e-0b7f7b8e8b0e",
    catalogId,
    kind: search ? "search" : "recommendations",
    query: search ? `robe d'été rouge ${i}? "quoted" ?? \\ ✓ :name` : undefined,
    productId: search ? undefined : `sku-${i}`,
    topK: 1 + (i % 500),
    visualWeight: 0.25 + (i % 3) / 4,
    filters: i % 2 === 0 ? [] : [{ field: "price", operator: "lte", value: 80.5 }, { field: "brand", operator: "in", value: ["a'b", "ç"] }],
    resultCount: i % 11,
    tookMs: 1.5 + i / 1000,
    sessionId: i % 4 === 0 ? undefined : `s-${i}`,
    ipAddress: i % 5 === 0 ? undefined : "203.0.113.9",
    userAgent: i % 6 === 0 ? undefined : "Mozilla/5.0 (X11; Linux x86_64)",
    at: new Date(Date.UTC(2026, 10, 29, 23, 59, 58) + i),
  };
}

describe("the search log", () => {
  it("writes more rows than one INSERT takes, each column as recorded", async () => {
    const catalogId = randomUUID();
    const log = new MysqlSearchLog(db.db, createLogger({ level: "silent" }), 60_000);
    // Past twice the batch, so writes go out in several INSERTs (500 a statement).
    const entries = Array.from({ length: 999 }, (_, i) => entry(catalogId, i));
    for (const e of entries) log.record(e);
    await log.close();
    const rows = await db.db.select().from(searchLog).where(eq(searchLog.catalogId, catalogId)).orderBy(asc(searchLog.id));
    expect(rows).toHaveLength(entries.length);
    rows.forEach((row, i) => {
      const e = entries[i]!;
      expect(row, `row ${i}`).toMatchObject({
        organizationId: e.organizationId,
        catalogId,
        kind: e.kind,
        query: e.query ?? null,
        productId: e.productId ?? null,
        topK: e.topK,
        visualWeight: e.visualWeight,
        filters: e.filters,
        resultCount: e.resultCount,
        tookMs: e.tookMs,
        sessionId: e.sessionId ?? null,
        ipAddress: e.ipAddress ?? null,
        userAgent: e.userAgent ?? null,
      });
      // The column keeps whole seconds of the UTC time recorded.
      expect(Math.abs(row.createdAt.getTime() - e.at.getTime()), `row ${i} createdAt`).toBeLessThan(1000);
    });
  });

  it("drops a batch the server refuses with one short line of no values, and goes on with the next", async () => {
    const catalogId = randomUUID();
    const lines: string[] = [];
    const logger = createLogger({ level: "info" }, { write: (line: string) => lines.push(line) });
    const log = new MysqlSearchLog(db.db, logger, 60_000);
    // A query longer than its column (1,000 characters): the strict server refuses the statement.
    const secret = `secret-${randomUUID()}`;
    log.record({ ...entry(catalogId, 1), query: `${secret} ${"x".repeat(1200)}` });
    await log.flush();
    log.record(entry(catalogId, 2));
    await log.close();
    const rows = await db.db.select().from(searchLog).where(eq(searchLog.catalogId, catalogId));
    expect(rows.map((r) => r.resultCount)).toEqual([entry(catalogId, 2).resultCount]);
    const failures = lines.filter((l) => l.includes("search log rows could not be written"));
    expect(failures).toHaveLength(1);
    expect(failures[0]!.length).toBeLessThan(4096);
    expect(failures[0]).not.toContain(secret);
    expect(JSON.parse(failures[0]!)).toMatchObject({ rows: 1, err: { type: "BulkInsertError", cause: { message: "database error", code: "ER_DATA_TOO_LONG" } } });
  });
});
