import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../logging/index.js";

const FILE = "object-url-secret";

/**
 * The secret that makes objectUrls unguessable (see processing/object-key.ts): generated once
 * into <dataDir>/object-url-secret (mode 0600), like the admin key, and read by the service and
 * every worker sharing that directory. Created exclusively, so processes starting together agree
 * on one. Never logged. Losing it changes nothing for stored images; only images stored after a
 * new secret get differently named files.
 */
export function resolveObjectUrlSecret(dataDir: string, log: Logger): Buffer {
  const path = join(dataDir, FILE);
  const stored = read(path);
  if (stored) return stored;
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(path, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
    log.info({ path }, "generated the objectUrl secret in the data directory");
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as { code?: unknown }).code !== "EEXIST") throw error;
  }
  const created = read(path);
  if (!created) throw new Error(`${path} holds no usable secret: delete it to have a new one generated`);
  return created;
}

function read(path: string): Buffer | undefined {
  try {
    const text = readFileSync(path, "utf8").trim();
    return text.length >= 32 ? Buffer.from(text, "utf8") : undefined;
  } catch {
    return undefined;
  }
}
