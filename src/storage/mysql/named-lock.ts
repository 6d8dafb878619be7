import type { Pool } from "mysql2/promise";

/**
 * Runs `work` under a MySQL named lock, or returns undefined if the lock is not had within
 * `waitMs`. The lock belongs to one connection, which is held for the whole of `work`: should this
 * process die, the server releases it with the connection, so no lock outlives its holder.
 */
export async function withNamedLock<T>(pool: Pool, name: string, waitMs: number, work: () => Promise<T>): Promise<T | undefined> {
  const connection = await pool.getConnection();
  try {
    const [rows] = await connection.query("SELECT GET_LOCK(?, ?) AS got", [name, waitMs / 1000]);
    if ((rows as { got: number | null }[])[0]?.got !== 1) return undefined;
    try {
      return await work();
    } finally {
      await connection.query("SELECT RELEASE_LOCK(?)", [name]);
    }
  } finally {
    connection.release();
  }
}
