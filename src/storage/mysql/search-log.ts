import type { Logger } from "../../logging/index.js";
import type { SearchLog, SearchLogEntry } from "../../search/index.js";
import type { Database } from "./connection.js";
import { searchLog } from "./schema.js";

/** Entries beyond this wait for the next flush; beyond twice this they are dropped (and counted). */
const BATCH = 500;

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
        await this.db.insert(searchLog).values(
          batch.map((e) => ({
            organizationId: e.organizationId,
            catalogId: e.catalogId,
            kind: e.kind,
            query: e.query ?? null,
            productId: e.productId ?? null,
            topK: e.topK,
            visualWeight: e.visualWeight,
            filters: e.filters as unknown[],
            resultCount: e.resultCount,
            tookMs: e.tookMs,
            sessionId: e.sessionId ?? null,
            ipAddress: e.ipAddress ?? null,
            userAgent: e.userAgent ?? null,
            createdAt: e.at,
          })),
        );
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
