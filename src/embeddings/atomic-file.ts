// Derived files in the cache directory are shared by processes and checkouts: each is written under
// a temporary name and renamed into place, so a reader sees the whole file or none.
import { rename, unlink, writeFile } from "node:fs/promises";

export async function writeAtomically(file: string, data: Uint8Array): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}
