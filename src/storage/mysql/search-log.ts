import type { MySqlColumn } from "drizzle-orm/mysql-core";
import type { SqlValue } from "mysql2";
import type { Logger } from "../../logging/index.js";
import type { SearchLog, SearchLogEntry } from "../../search/index.js";
import { bulkInsert } from "./bulk-insert.js";
import type { Database } from "./connection.js";
import { searchLog } from "./schema.js";

/** Entries beyond this wait for the next flush; beyond twice this they are dropped (and counted). */
const BATCH = 500;

/** Each column written, with its value from an entry. */
const FIELDS: readonly [MySqlColumn, (e: SearchLogEntry) => SqlValue][] = [
  [searchLog.organizationId, (e) => e.organizationId],
  [searchLog.catalogId, (e) => e.catalogId],
  [searchLog.kind, (e) => e.kind],
  [searchLog.query, (e) => e.query ?? null],
  [searchLog.productId, (e) => e.productId ?? null],
  [searchLog.topK, (e) => e.topK],
  [searchLog.visualWeight, (e) => e.visualWeight],
  [searchLog.filters, (e) => JSON.stringify(e.filters)],
  [searchLog.resultCount, (e) => e.resultCount],
  [searchLog.tookMs, (e) => e.tookMs],
  [searchLog.sessionId, (e) => e.sessionId ?? null],
  [searchLog.ipAddress, (e) => e.ipAddress ?? null],
  [searchLog.userAgent, (e) => e.userAgent ?? null],
  [searchLog.createdAt, (e) => e.at],
];
const COLUMNS = FIELDS.map(([column]) => column);
const rowOf = (e: SearchLogEntry) => FIELDS.map(([, value]) => value(e));

/**
 * Writes search and recommendation log rows in batches, off the request path: a request never
 * waits for its log row. Rows buffered when the process dies are lost; they are analytics, not data.
 */
export class MysqlSearchLog implements SearchLog {
  private buffer: SearchLogEntry[] = [];
  private dropped = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  record(entry: SearchLogEntry): void {
    if (this.buffer.length >= 2 * BATCH) {
      this.dropped++;
      return;
    }
    this.buffer.push(entry);
    if (this.buffer.length >= BATCH) void this.flush();
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, BATCH);
      try {
        await bulkInsert(this.db, searchLog, COLUMNS, batch.map(rowOf));
      } catch (error) {
        this.log.error({ err: error, rows: batch.length }, "search log rows could not be written; dropped");
      }
    }
    if (this.dropped > 0) {
      this.log.warn({ rows: this.dropped }, "search log buffer full: rows dropped");
      this.dropped = 0;
    }
  }
}
