// Cross-process mutual exclusion for callers sharing a cache directory (several vitest workers,
// a CLI and a test run). Node has no flock(), so the lock is an O_EXCL-created file holding the
// owner's pid; a lock whose owner no longer exists is taken over instead of blocking forever.
import { open, readFile, stat, unlink } from "node:fs/promises";
import os from "node:os";

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readOwner(path: string): Promise<{ raw: string; owner: LockOwner | undefined } | undefined> {
  try {
    const raw = await readFile(path, "utf8");
    try {
      return { raw, owner: JSON.parse(raw) as LockOwner };
    } catch {
      return { raw, owner: undefined };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function withFileLock<T>(
  path: string,
  opts: { timeoutMs: number; purpose: string; log?: (line: string) => void },
  fn: () => Promise<T>,
): Promise<T> {
  const me: LockOwner = { pid: process.pid, host: os.hostname(), since: new Date().toISOString() };
  const deadline = Date.now() + opts.timeoutMs;
  let announced = false;
  for (;;) {
    try {
      const handle = await open(path, "wx");
      try {
        await handle.writeFile(JSON.stringify(me));
      } finally {
        await handle.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const current = await readOwner(path);
    if (!current) continue;
    const { owner } = current;
    // A lock file caught half-written has no parseable owner yet: only an old one (its writer died
    // between create and write) is stale.
    const stale =
      owner === undefined
        ? Date.now() - (await stat(path).then((s) => s.mtimeMs, () => Date.now())) > 10_000
        : owner.host === me.host && owner.pid !== me.pid && !isAlive(owner.pid);
    if (stale) {
      // Re-read just before removing so that a lock re-taken meanwhile by a live process survives.
      const again = await readOwner(path);
      if (again?.raw === current.raw) {
        opts.log?.(`removing stale lock ${path} (owner ${owner ? `pid ${owner.pid} is gone` : "unknown"})`);
        await unlink(path).catch(() => undefined);
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${Math.round(opts.timeoutMs / 1000)} s waiting for the lock ${path} (${opts.purpose}), ` +
          `held by ${owner ? `pid ${owner.pid} on ${owner.host} since ${owner.since}` : "an unknown owner"}. ` +
          `If that process is gone, delete the lock file and retry.`,
      );
    }
    if (!announced) {
      opts.log?.(`waiting for ${opts.purpose} by pid ${owner?.pid ?? "?"} (lock ${path})`);
      announced = true;
    }
    await sleep(250);
  }
  try {
    return await fn();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}
