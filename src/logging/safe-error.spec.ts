import { DrizzleQueryError } from "drizzle-orm";
import { ReplyError } from "ioredis";
import { describe, expect, it } from "vitest";
import { capLine, createLogger, MAX_LOG_LINE_BYTES } from "./create-logger.js";
import { safeError } from "./safe-error.js";

const vector = Array.from({ length: 20_000 }, (_, i) => Math.sin(i).toFixed(8)).join(",");

/** mysql2's error as it reaches us: the statement with values inlined in `sql`, a value quoted in the message. */
function mysql2Error(): Error {
  return Object.assign(new Error("Duplicate entry 'secret-sku' for key 'PRIMARY'"), {
    code: "ER_DUP_ENTRY",
    errno: 1062,
    sqlState: "23000",
    sqlMessage: "Duplicate entry 'secret-sku' for key 'PRIMARY'",
    sql: `insert into products values ('secret-sku', X'${"ab".repeat(50_000)}')`,
  });
}

describe("safeError", () => {
  it("logs a drizzle query error by its statement shape and its driver's code, never its values", () => {
    const error = new DrizzleQueryError("insert into `catalog_text_maps` (`catalog_id`, `map`) values (?, ?)", ["secret-sku", vector], mysql2Error());
    const safe = safeError(error);
    const text = JSON.stringify(safe);
    expect(safe).toMatchObject({ type: "DrizzleQueryError", statement: "insert into `catalog_text_maps` (`catalog_id`, `map`) values (?, ?)" });
    expect(safe.cause).toMatchObject({ code: "ER_DUP_ENTRY", errno: 1062, sqlState: "23000" });
    expect(text).not.toContain("secret-sku");
    expect(text).not.toContain("0.84147098");
    expect(text.length).toBeLessThan(3000);
  });

  it("logs a Redis reply error by its message and command name, not its arguments", () => {
    const error = Object.assign(new ReplyError("ERR syntax error"), { command: { name: "vadd", args: ["key", vector, "secret-sku"] } });
    const text = JSON.stringify(safeError(error));
    expect(text).toContain("ERR syntax error");
    expect(text).toContain("vadd");
    expect(text).not.toContain("secret-sku");
    expect(text).not.toContain("0.84147098");
  });

  it("bounds other errors: message, stack and causes", () => {
    const inner = new Error("x".repeat(10_000));
    const safe = safeError(new Error("outer", { cause: new Error("middle", { cause: new Error("deeper", { cause: inner }) }) }));
    expect(JSON.stringify(safe).length).toBeLessThan(4000);
    expect(safe.stack!.split("\n").length).toBeLessThanOrEqual(8);
  });
});

describe("log lines", () => {
  it("never exceed 4 KB: a longer one keeps its level, time, ids and message and says how long it was", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "info" }, { write: (line: string) => void lines.push(line) });
    log.info({ reqId: "r-1", blob: vector }, "something large");
    log.error({ err: new DrizzleQueryError("select ?", [vector], mysql2Error()) }, "query failed");
    for (const line of lines) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_LOG_LINE_BYTES);
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ level: 30, reqId: "r-1", msg: "something large" });
    expect(first.truncatedBytes).toBeGreaterThan(100_000);
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 50, msg: "query failed", err: { type: "DrizzleQueryError", statement: "select ?" } });
  });

  it("leaves lines within the limit as they are", () => {
    const line = `${JSON.stringify({ level: 30, msg: "ok" })}\n`;
    expect(capLine(line)).toBe(line);
  });
});
