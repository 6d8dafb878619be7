// What the API process's hot multi-row inserts hold its event loop for, against drizzle's insert
// builder on the same rows (the way they were built before `src/storage/mysql/bulk-insert.ts`).
// Every request the process serves meanwhile waits behind that time: Create Products writes 1,000
// products as five 200-row upserts plus their index-queue rows, and the search log writes a second's
// searches at once.
//
//   npx tsx bench/mysql-inserts.ts [--rounds 20]
//
// The service's own code runs against a scratch database on the machine's MariaDB
// (MysqlProductRepository.upsertBatch, MysqlSearchLog), while the event loop's delay is sampled
// (monitorEventLoopDelay, 1 ms resolution; its max is the longest block). The baseline is drizzle's
// insert builder producing the same statements (toSQL: its synchronous part, which is what blocks).
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { createLogger } from "../src/logging/index.js";
import { MysqlProductRepository, MysqlSearchLog, openMysql } from "../src/storage/mysql/index.js";
import { indexQueue, products, searchLog } from "../src/storage/mysql/schema.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "../test/support/scratch-mysql.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "20" } } });
const ROUNDS = Number(values.rounds);
const BATCH = 1000;
const LOG_ROWS = 500;

const url = scratchDatabaseUrl();
const mysql = await openMysql(url);
try {
  const catalogId = randomUUID();
  const now = new Date();
  const batch = Array.from({ length: BATCH }, (_, i) => ({
    id: `sku-${i}`,
    imageUrl: `https://images.example.com/catalog/${i}/main.jpg`,
    descriptor: `women's red running shoe, breathable mesh, model ${i}`,
    metadata: { brand: `brand-${i % 50}`, price: 20 + (i % 180), colour: "red", sizes: [36, 37, 38, 39], inStock: i % 3 !== 0 },
  }));
  const logEntries = Array.from({ length: LOG_ROWS }, (_, i) => ({
    organizationId: randomUUID(),
    catalogId,
    kind: "search" as const,
    query: `red running shoes ${i}`,
    productId: undefined,
    topK: 10,
    visualWeight: 0.5,
    filters: [{ field: "price", operator: "lte" as const, value: 80 }],
    resultCount: 10,
    tookMs: 3.2,
    sessionId: `s-${i}`,
    ipAddress: "203.0.113.9",
    userAgent: "Mozilla/5.0 (X11; Linux x86_64)",
    at: now,
  }));

  // Baseline: the same writes built by drizzle's insert builder, as before.
  const drizzleUpsert = () =>
    mysql.db.transaction(async (tx) => {
      const at = new Date();
      for (let start = 0; start < BATCH; start += 200) {
        const rows = batch.slice(start, start + 200).map((p) => ({ ...p, catalogId, status: "PROCESSING" as const, createdAt: at, updatedAt: at }));
        await tx
          .insert(products)
          .values(rows)
          .onDuplicateKeyUpdate({
            set: {
              imageUrl: sql`VALUES(${products.imageUrl})`,
              descriptor: sql`VALUES(${products.descriptor})`,
              metadata: sql`VALUES(${products.metadata})`,
              status: sql`VALUES(${products.status})`,
              updatedAt: sql`VALUES(${products.updatedAt})`,
              generation: sql`${products.generation} + 1`,
              attempts: 0,
              leaseOwner: null,
              leaseExpiresAt: null,
              nextAttemptAt: null,
              errorReason: null,
            },
          });
      }
      await tx
        .insert(indexQueue)
        .values(batch.map((p) => ({ catalogId, productId: p.id })))
        .onDuplicateKeyUpdate({ set: { version: sql`${indexQueue.version} + 1` } });
    });
  const drizzleLog = async () => {
    await mysql.db.insert(searchLog).values(logEntries.map(({ at, ...e }) => ({ ...e, productId: null, filters: e.filters as unknown[], createdAt: at })));
  };

  /** A write timed whole, with the event loop's longest block and p99 meanwhile. */
  const timed = async (work: () => Promise<unknown>) => {
    for (let r = 0; r < 3; r++) await work();
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const started = performance.now();
    for (let r = 0; r < ROUNDS; r++) await work();
    const ms = (performance.now() - started) / ROUNDS;
    delay.disable();
    return { ms, maxBlock: delay.max / 1e6, p99Block: delay.percentile(99) / 1e6 };
  };

  const repository = new MysqlProductRepository(mysql.db);
  const log = new MysqlSearchLog(mysql.db, createLogger({ level: "silent" }), 3_600_000);
  // Interleaved, so both see the same machine.
  const rounds = { service: [] as Awaited<ReturnType<typeof timed>>[], drizzle: [] as Awaited<ReturnType<typeof timed>>[] };
  const logRounds = { service: [] as Awaited<ReturnType<typeof timed>>[], drizzle: [] as Awaited<ReturnType<typeof timed>>[] };
  for (let k = 0; k < 3; k++) {
    rounds.drizzle.push(await timed(drizzleUpsert));
    rounds.service.push(await timed(() => repository.upsertBatch(catalogId, batch, new Date())));
    logRounds.drizzle.push(await timed(drizzleLog));
    logRounds.service.push(await timed(async () => {
      for (const e of logEntries) log.record(e);
      await log.flush();
    }));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const summary = (rs: Awaited<ReturnType<typeof timed>>[]) => ({ ms: median(rs.map((r) => r.ms)), maxBlock: median(rs.map((r) => r.maxBlock)), p99Block: median(rs.map((r) => r.p99Block)) });
  const upsert = summary(rounds.service);
  const drizzleUpsertRun = summary(rounds.drizzle);
  const logged = summary(logRounds.service);
  const drizzleLogRun = summary(logRounds.drizzle);

  const f = (x: number) => `${x.toFixed(2)} ms`;
  const line = (label: string, r: { ms: number; maxBlock: number; p99Block: number }) =>
    console.log(`    ${label.padEnd(28)} whole write ${f(r.ms)}; event loop blocked at most ${f(r.maxBlock)}, p99 ${f(r.p99Block)}`);
  console.log(`mysql inserts: ${ROUNDS} writes per round, 3 rounds of each interleaved (medians); scratch database on ${new URL(url).host}; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  console.log(`  Create Products, ${BATCH} products (5 upserts of 200 + their index-queue rows, one transaction)`);
  line("service (mysql2-formatted)", upsert);
  line("drizzle's insert builder", drizzleUpsertRun);
  console.log(`  search log, ${LOG_ROWS} rows in one INSERT`);
  line("service (mysql2-formatted)", logged);
  line("drizzle's insert builder", drizzleLogRun);
  console.log(`  ratios, service / drizzle: Create Products write ${(upsert.ms / drizzleUpsertRun.ms).toFixed(2)}, longest block ${(upsert.maxBlock / drizzleUpsertRun.maxBlock).toFixed(2)}; ` +
    `search log write ${(logged.ms / drizzleLogRun.ms).toFixed(2)}, longest block ${(logged.maxBlock / drizzleLogRun.maxBlock).toFixed(2)}`);
} finally {
  await mysql.close();
  await dropScratchDatabase(url);
}
