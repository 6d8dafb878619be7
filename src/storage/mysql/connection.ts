import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/mysql2";
import type { MySql2Database } from "drizzle-orm/mysql2";
import { migrate } from "drizzle-orm/mysql2/migrator";
import mysql from "mysql2/promise";
import * as schema from "./schema.js";

export type Database = MySql2Database<typeof schema>;

/** The database or a transaction: a statement commits with whatever else the caller writes there. */
export type Executor = Pick<Database, "execute">;

export interface MysqlConnection {
  db: Database;
  pool: mysql.Pool;
  databaseName: string;
  close(): Promise<void>;
}

/**
 * Opens a pool on the database named in the URL, creating the database when it does not exist
 * and applying the committed migrations. Several processes may start at once: a named lock
 * serialises their migrations.
 */
export async function openMysql(url: string): Promise<MysqlConnection> {
  const parsed = new URL(url);
  const databaseName = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  if (!/^[A-Za-z0-9_]+$/.test(databaseName)) {
    throw new Error(`MYSQL_URL must name a database made of letters, digits and _ (got "${databaseName}")`);
  }
  await createDatabaseIfMissing(parsed, databaseName);
  const pool = mysql.createPool({
    uri: url,
    timezone: "Z",
    connectionLimit: 10,
    charset: "utf8mb4_unicode_ci",
    enableKeepAlive: true,
  });
  const db = drizzle(pool, { schema, mode: "default" });
  const lockConnection = await pool.getConnection();
  try {
    await lockConnection.query("SELECT GET_LOCK('vitrine_migrations', 120)");
    await migrate(db, { migrationsFolder: migrationsFolder() });
  } finally {
    await lockConnection.query("SELECT RELEASE_LOCK('vitrine_migrations')").catch(() => undefined);
    lockConnection.release();
  }
  return { db, pool, databaseName, close: () => pool.end() };
}

async function createDatabaseIfMissing(url: URL, name: string): Promise<void> {
  const serverUrl = new URL(url);
  serverUrl.pathname = "/";
  const connection = await mysql.createConnection({ uri: serverUrl.toString() });
  try {
    await connection.query(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await connection.end();
  }
}

/** The SQL files sit beside this source file; compiled code (dist/) finds them back in src/. */
function migrationsFolder(): string {
  const here = fileURLToPath(new URL("./migrations", import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL("../../../../src/storage/mysql/migrations", import.meta.url));
}
