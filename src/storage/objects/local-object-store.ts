import { randomBytes } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ObjectStore } from "../../processing/index.js";
import { objectKeyFor } from "../../processing/object-key.js";

/**
 * `<catalog uuid>/<64 hex>.jpg`: the only keys processing writes, so the only ones served. The
 * name is an HMAC of the image's hash (processing/object-key.ts); before it, the hash itself.
 */
const KEY_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/[0-9a-f]{64}\.jpg$/;

export function isObjectKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/**
 * Objects as files under a local directory, served by the service at /objects/<key>. Keys hold
 * the catalog's UUID and a keyed hash of the image's content, so URLs are unguessable without the
 * service's secret, and immutable.
 */
export class LocalObjectStore implements ObjectStore {
  constructor(
    readonly root: string,
    /** Resolved late: the service's address may be known only once it listens. */
    private readonly baseUrl: () => string,
    /** Keys object names (see resolveObjectUrlSecret). */
    private readonly secret: Buffer,
  ) {}

  keyFor(catalogId: string, imageSha256: string): string {
    return objectKeyFor(this.secret, catalogId, imageSha256);
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    // Write then rename: a reader (or a crash) never sees half a file.
    const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    await writeFile(temporary, bytes, { flush: true });
    await rename(temporary, path);
  }

  urlOf(key: string): string {
    return `${this.baseUrl()}/objects/${key}`;
  }

  pathOf(key: string): string {
    if (!isObjectKey(key)) throw new Error(`not an object key: ${key}`);
    return join(this.root, key);
  }
}
