// A database of one test server's, spec's or bench's own on the machine's MariaDB (MYSQL_URL's
// server), dropped when done, so runs in parallel never share rows.
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";

const BASE_MYSQL_URL = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/vitrine";

/** The URL of a new, uniquely named database (openMysql creates and migrates it). */
export function scratchDatabaseUrl(): string {
  const url = new URL(BASE_MYSQL_URL);
  url.pathname = `/vitrine_test_${randomBytes(6).toString("hex")}`;
  return url.toString();
}

export async function dropScratchDatabase(databaseUrl: string): Promise<void> {
  const connection = await mysql.createConnection({ uri: BASE_MYSQL_URL.replace(/\/[^/]*$/, "/") });
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${new URL(databaseUrl).pathname.slice(1)}\``);
  } finally {
    await connection.end();
  }
}
