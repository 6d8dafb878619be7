import { homedir } from "node:os";
import { join } from "node:path";

/** Derived files (compact word vectors, sample photos, Redis 8) shared with every other test and checkout. */
export const cacheDir = process.env.CACHE_DIR ?? join(homedir(), ".cache", "vitrine");
