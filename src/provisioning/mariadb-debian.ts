// MariaDB for a machine that has none: Debian's own build, fetched with `apt-get download` through
// this machine's apt sources (its release, not trixie) and unpacked with dpkg-deb into a cache
// folder. Nothing is installed; the libraries the server needs travel with it.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { childEnvironment } from "../config/index.js";
import { withFileLock } from "./file-lock.js";
import { runCommand } from "./run-command.js";

/** The server, the bootstrap script and what they load that a slim system may lack. */
const PACKAGES = [
  "mariadb-server-core",
  "mariadb-client-core", // my_print_defaults, which mariadb-install-db runs
  "mariadb-common",
  "libaio1",
  "liburing2",
  "libnuma1",
  "libpcre2-8-0",
  "libssl3",
  "zlib1g",
  "libcrypt1",
];

export interface FetchedMariadb {
  /** The unpacked `usr` folder: sbin/mariadbd, bin/mariadb-install-db, share/mysql. */
  basedir: string;
  /** Extra environment for the fetched binaries (their libraries first). */
  env: NodeJS.ProcessEnv;
}

function libraryPath(root: string): string {
  const dirs = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib/aarch64-linux-gnu", "usr/lib"];
  return dirs
    .map((d) => path.join(root, d))
    .filter((d) => existsSync(d))
    .join(":");
}

function describe(root: string): FetchedMariadb {
  const basedir = path.join(root, "usr");
  const inherited = childEnvironment().LD_LIBRARY_PATH;
  const libs = libraryPath(root);
  return { basedir, env: { LD_LIBRARY_PATH: inherited ? `${libs}:${inherited}` : libs } };
}

function complete(root: string): boolean {
  return existsSync(path.join(root, "usr/sbin/mariadbd")) && existsSync(path.join(root, "usr/bin/mariadb-install-db"));
}

export async function ensureDebianMariadb(opts: { cacheDir: string; log?: (line: string) => void }): Promise<FetchedMariadb> {
  const log = opts.log ?? (() => undefined);
  const base = path.join(path.resolve(opts.cacheDir), "mariadb");
  const root = path.join(base, "root");
  if (complete(root)) return describe(root);
  await mkdir(base, { recursive: true });
  await withFileLock(path.join(base, "fetch.lock"), { timeoutMs: 10 * 60_000, purpose: "fetching MariaDB", log }, async () => {
    if (complete(root)) return;
    const stage = await mkdtemp(path.join(base, "stage-"));
    try {
      log(`fetching ${PACKAGES.join(", ")} with apt-get download into ${base}`);
      try {
        await runCommand("apt-get", ["download", "-q", ...PACKAGES], {
          cwd: stage,
          timeoutMs: 600_000,
          env: childEnvironment({ LC_ALL: "C" }),
        });
      } catch (err) {
        throw new Error(
          `cannot fetch MariaDB from Debian's archive (${(err as Error).message.split("\n")[0]}). ` +
            `Install MariaDB (apt-get install mariadb-server), or set MYSQL_URL to a MySQL/MariaDB server.`,
          { cause: err },
        );
      }
      const unpacked = path.join(stage, "root");
      for (const deb of (await readdir(stage)).filter((f) => f.endsWith(".deb"))) {
        await runCommand("dpkg-deb", ["-x", path.join(stage, deb), unpacked], { timeoutMs: 120_000 });
      }
      if (!complete(unpacked)) throw new Error(`the fetched packages hold no usr/sbin/mariadbd and usr/bin/mariadb-install-db (in ${unpacked})`);
      // The folder appears complete or not at all.
      await rm(root, { recursive: true, force: true });
      await rename(unpacked, root);
    } finally {
      await rm(stage, { recursive: true, force: true });
    }
  });
  return describe(root);
}
