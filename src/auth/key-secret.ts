import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const PREFIX = "vtr";
const KEY_PATTERN = /^vtr_([a-z0-9]{12})_([A-Za-z0-9]{40})$/;

/**
 * An organization key reads `vtr_<id>_<secret>`: the id finds the stored record without a scan,
 * and 40 base62 characters (~238 bits) of secret make a fast hash safe to store.
 */
export function generateKey(): { id: string; secret: string; key: string } {
  const id = randomString(12, ALPHABET.slice(0, 26) + "0123456789");
  const secret = randomString(40, ALPHABET);
  return { id, secret, key: `${PREFIX}_${id}_${secret}` };
}

export function parseKey(key: string): { id: string; secret: string } | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** Constant-time comparison of two secrets of any length. */
export function secretsMatch(presented: string, expectedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), "hex");
  const b = Buffer.from(expectedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

function randomString(length: number, alphabet: string): string {
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}
