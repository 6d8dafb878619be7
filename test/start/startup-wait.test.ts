// Start-up against stores that are away or refuse the service: the real entry point in its own
// process, as an operator starts it. A bounded, logged wait, then one line naming the variable.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../support/free-port.js";

const BASE_MYSQL_URL = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/vitrine";
const database = `vitrine_test_startup_${randomBytes(4).toString("hex")}`;
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-startup-"));
afterAll(async () => {
  const connection = await mysql.createConnection({ uri: BASE_MYSQL_URL.replace(/\/[^/]*$/, "/") });
  await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
  await connection.end();
  rmSync(dataDir, { recursive: true, force: true });
});

function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", "src/apps/api/main.ts"], {
    env: { ...process.env, PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, WORKERS: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr, ms: performance.now() - started })));
}

const PASSWORD = "s3cret-Pa55word";

describe("start-up without its stores", () => {
  it("retries an unreachable MySQL for STARTUP_WAIT_MS, then exits with one line naming MYSQL_URL and the address", { timeout: 60_000 }, async () => {
    const port = await freePort();
    const result = await start({ MYSQL_URL: `mysql://root:${PASSWORD}@127.0.0.1:${port}/vitrine`, REDIS_URL: inject("redisUrl")!, STARTUP_WAIT_MS: "1500" });
    expect(result.code).toBe(1);
    expect(result.ms).toBeGreaterThan(1500);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`cannot reach MySQL at mysql://root:\\*\\*\\*@127\\.0\\.0\\.1:${port}/vitrine \\(ECONNREFUSED\\).*check MYSQL_URL`));
    const retries = result.stdout.split("\n").filter((line) => line.includes("not reachable yet; retrying"));
    expect(retries.length).toBeGreaterThanOrEqual(2);
    for (const output of [result.stdout, result.stderr]) {
      expect(output).not.toContain(PASSWORD);
      expect(output).not.toMatch(/\n\s+at /);
    }
  });

  it("exits at once when MySQL refuses the credentials, naming MYSQL_URL", { timeout: 60_000 }, async () => {
    const server = new URL(BASE_MYSQL_URL);
    const result = await start({
      MYSQL_URL: `mysql://vitrine_no_such_user:${PASSWORD}@${server.host}/vitrine`,
      REDIS_URL: inject("redisUrl")!,
      STARTUP_WAIT_MS: "20000",
    });
    expect(result.code).toBe(1);
    expect(result.ms).toBeLessThan(15_000);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/MySQL at mysql:\/\/vitrine_no_such_user:\*\*\*@.*ER_ACCESS_DENIED_ERROR.*check MYSQL_URL/);
    expect(result.stdout + result.stderr).not.toContain(PASSWORD);
  });

  it("retries an unreachable Redis, then exits with one line naming REDIS_URL", { timeout: 60_000 }, async () => {
    const port = await freePort();
    const mysqlUrl = new URL(BASE_MYSQL_URL);
    mysqlUrl.pathname = `/${database}`;
    const result = await start({ MYSQL_URL: mysqlUrl.toString(), REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}`, STARTUP_WAIT_MS: "1000" });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}.*ECONNREFUSED.*check REDIS_URL`));
    expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    expect(result.stdout + result.stderr).not.toMatch(/\n\s+at /);
  });
});
