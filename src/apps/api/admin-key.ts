import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { adminKeyPath } from "../../config/index.js";
import type { Logger } from "../../logging/index.js";

/**
 * The admin key: ADMIN_API_KEY when set. Otherwise a key generated once and kept in
 * <dataDir>/admin-api-key (mode 0600), so a fresh checkout starts with no setup and never
 * runs without authentication. The key itself is never logged, only where to find it.
 */
export function resolveAdminKey(configured: string | undefined, dataDir: string, log: Logger): string {
  if (configured) return configured;
  const path = adminKeyPath(dataDir);
  try {
    const stored = readFileSync(path, "utf8").trim();
    if (stored.length >= 16) {
      log.info({ path }, "ADMIN_API_KEY not set: using the admin key stored in the data directory");
      return stored;
    }
  } catch {
    // No stored key yet.
  }
  mkdirSync(dataDir, { recursive: true });
  const key = `vtr_admin_${randomBytes(24).toString("base64url")}`;
  writeFileSync(path, `${key}\n`, { mode: 0o600, flag: "w" });
  log.warn({ path }, "ADMIN_API_KEY not set: generated an admin key and stored it in the data directory");
  return key;
}
