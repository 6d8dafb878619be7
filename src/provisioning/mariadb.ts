// Gives the service a MySQL-compatible server where none is configured or reachable: reuse one that
// already answers on its port, else start MariaDB in user space (a mariadbd on PATH, else Debian's
// build fetched into the cache folder) with its data in a folder of the caller's choosing.
import { existsSync } from "node:fs";
import { access, mkdir, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { childEnvironment, executableSearchPath } from "../config/index.js";
import mysql from "mysql2/promise";
import { withFileLock } from "./file-lock.js";
import { ensureDebianMariadb } from "./mariadb-debian.js";
import { runCommand } from "./run-command.js";
import { ServerStartError, startServerChild } from "./server-child.js";

const HOST = "127.0.0.1";
const WHAT_TO_DO = "Set MYSQL_URL to a MySQL/MariaDB server, or install MariaDB (apt-get install mariadb-server).";

export interface ProvisionedMariadb {
  /** Server URL with no database: `mysql://root@127.0.0.1:<port>/`. */
  url: string;
  port: number;
  version: string;
  startedByUs: boolean;
  stop(): Promise<void>;
}

export interface ProvisionMariadbOptions {
  cacheDir: string;
  /** Default 3307, next to a system MySQL on 3306. */
  port?: number;
  /** Default `<cacheDir>/mariadb/data-<port>`; holds the databases and mariadb.log. */
  dataDir?: string;
  log?: (line: string) => void;
  /** "debian" skips a mariadbd on this machine and uses the build fetched from Debian's archive. */
  source?: "auto" | "debian";
  /** How long the started server may take to answer; default 60 s. */
  startTimeoutMs?: number;
}

export type MysqlProbe =
  | { kind: "free" }
  | { kind: "mysql"; version: string; datadir: string }
  | { kind: "other"; error: string };

/** Whether a MySQL server answers on host:port for root without a password. */
export async function probeMysql(host: string, port: number, timeoutMs = 3000): Promise<MysqlProbe> {
  let connection: mysql.Connection | undefined;
  try {
    connection = await mysql.createConnection({ host, port, user: "root", connectTimeout: timeoutMs });
    const [rows] = await connection.query<mysql.RowDataPacket[]>("SELECT VERSION() AS version, @@datadir AS datadir");
    const row = rows[0];
    return { kind: "mysql", version: String(row?.version ?? "unknown"), datadir: String(row?.datadir ?? "") };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ECONNREFUSED") return { kind: "free" };
    return { kind: "other", error: `${code ?? "error"}: ${(err as Error).message}` };
  } finally {
    await connection?.end().catch(() => connection?.destroy());
  }
}

interface Binaries {
  label: string;
  mariadbd: string;
  installDb: string;
  /** Only for a fetched build: where its share/ and lib/ live. */
  basedir?: string;
  env: NodeJS.ProcessEnv;
}

async function onPath(name: string, extraDirs: string[] = []): Promise<string | undefined> {
  const dirs = [...executableSearchPath(), ...extraDirs];
  for (const dir of dirs) {
    const file = path.join(dir, name);
    try {
      await access(file, 1 /* X_OK */);
      return file;
    } catch {
      // next
    }
  }
  return undefined;
}

async function systemBinaries(): Promise<Binaries | undefined> {
  // /usr/sbin is often missing from an unprivileged user's PATH.
  const mariadbd = (await onPath("mariadbd", ["/usr/sbin", "/usr/local/sbin"])) ?? (await onPath("mysqld", ["/usr/sbin"]));
  const installDb = (await onPath("mariadb-install-db")) ?? (await onPath("mysql_install_db"));
  if (!mariadbd || !installDb) return undefined;
  try {
    const out = (await runCommand(mariadbd, ["--version"], { timeoutMs: 10_000 })).stdout;
    if (!/mariadb/i.test(out)) return undefined; // MySQL's mysqld bootstraps differently
  } catch {
    return undefined;
  }
  return { label: `${mariadbd} from this machine`, mariadbd, installDb, env: {} };
}

async function fetchedBinaries(cacheDir: string, log: (line: string) => void): Promise<Binaries> {
  const fetched = await ensureDebianMariadb({ cacheDir, log });
  return {
    label: `MariaDB from Debian's archive (${fetched.basedir})`,
    mariadbd: path.join(fetched.basedir, "sbin/mariadbd"),
    installDb: path.join(fetched.basedir, "bin/mariadb-install-db"),
    basedir: fetched.basedir,
    env: fetched.env,
  };
}

function childEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  // A host LD_PRELOAD would be loaded into a binary built against another glibc.
  return childEnvironment({ ...extra, LC_ALL: "C", LD_PRELOAD: undefined });
}

const runningAsRoot = () => process.getuid?.() === 0;

/** A Unix socket path must fit in 108 bytes; a deep data folder gets one in the temp folder. */
function socketPath(dataDir: string, port: number): string {
  const inData = path.join(dataDir, "mysqld.sock");
  return Buffer.byteLength(inData) < 100 ? inData : path.join(os.tmpdir(), `vitrine-mariadb-${port}.sock`);
}

async function initialise(bin: Binaries, dataDir: string, log: (line: string) => void): Promise<void> {
  if (existsSync(path.join(dataDir, "mysql", "db.frm"))) return;
  log(`initialising a MariaDB data folder in ${dataDir}`);
  await mkdir(dataDir, { recursive: true });
  const args = [
    "--no-defaults",
    `--datadir=${dataDir}`,
    // root logs in with no password (over TCP on 127.0.0.1 too), like a fresh developer install.
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
    "--skip-name-resolve",
  ];
  if (bin.basedir) args.push(`--basedir=${bin.basedir}`);
  if (runningAsRoot()) args.push("--user=root");
  try {
    await runCommand(bin.installDb, args, { timeoutMs: 120_000, env: childEnv(bin.env) });
  } catch (err) {
    throw new Error(`could not initialise MariaDB's data folder ${dataDir}: ${(err as Error).message}\n${WHAT_TO_DO}`, { cause: err });
  }
}

function serverArgs(bin: Binaries, port: number, dataDir: string, logFile: string): string[] {
  const args = [
    "--no-defaults",
    `--datadir=${dataDir}`,
    `--port=${port}`,
    `--bind-address=${HOST}`,
    `--socket=${socketPath(dataDir, port)}`,
    `--pid-file=${path.join(dataDir, "mariadbd.pid")}`,
    `--log-error=${logFile}`,
    "--skip-name-resolve",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_unicode_ci",
  ];
  if (bin.basedir) {
    args.push(`--basedir=${bin.basedir}`, `--lc-messages-dir=${path.join(bin.basedir, "share/mysql")}`, `--plugin-dir=${path.join(bin.basedir, "lib/mysql/plugin")}`);
  }
  // mariadbd refuses to run as root unless told to.
  if (runningAsRoot()) args.push("--user=root");
  return args;
}

const sameDir = async (a: string, b: string) => {
  const norm = async (p: string) => (await realpath(p).catch(() => path.resolve(p))).replace(/\/+$/, "");
  return (await norm(a)) === (await norm(b));
};

async function startChild(bin: Binaries, port: number, dataDir: string, timeoutMs: number, log: (line: string) => void) {
  // mariadbd's own log goes to --log-error; this file also catches what it prints before that.
  const logFile = path.join(dataDir, "mariadb.log");
  return startServerChild({
    name: "mariadbd",
    command: bin.mariadbd,
    args: serverArgs(bin, port, dataDir, logFile),
    cwd: dataDir,
    env: childEnv(bin.env),
    port,
    logFile,
    timeoutMs,
    pollMs: 200,
    async ready() {
      const probe = await probeMysql(HOST, port, 1000);
      // The answer must come from our server, not another that won a race for the port.
      return probe.kind === "mysql" && (await sameDir(probe.datadir, dataDir)) ? probe.version : undefined;
    },
    addressInUse: /address already in use|Can't start server: Bind/i,
    stopGraceMs: 30_000,
    remedy: WHAT_TO_DO,
    log,
  });
}

function occupiedError(port: number, probe: MysqlProbe): Error {
  const what = probe.kind === "other" ? `something root cannot log in to without a password (${probe.error})` : "another server";
  return new Error(`port ${port} on ${HOST} is held by ${what}. Stop it, or set MYSQL_URL to a MySQL/MariaDB server.`);
}

function reused(port: number, version: string): ProvisionedMariadb {
  return { url: `mysql://root@${HOST}:${port}/`, port, version, startedByUs: false, stop: async () => undefined };
}

export async function provisionMariadb(opts: ProvisionMariadbOptions): Promise<ProvisionedMariadb> {
  const log = opts.log ?? (() => undefined);
  const port = opts.port ?? 3307;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid MariaDB port ${String(port)}: pass an integer between 1 and 65535`);
  const cacheDir = path.resolve(opts.cacheDir);
  const base = path.join(cacheDir, "mariadb");
  const dataDir = path.resolve(opts.dataDir ?? path.join(base, `data-${port}`));

  const first = await probeMysql(HOST, port);
  if (first.kind === "mysql") {
    log(`reusing ${first.version} already on ${HOST}:${port}`);
    return reused(port, first.version);
  }
  if (first.kind !== "free") throw occupiedError(port, first);

  // Binaries are made ready before queueing for the port, so a download never counts against
  // another caller's wait for the lock.
  const bin = (opts.source !== "debian" ? await systemBinaries() : undefined) ?? (await fetchedBinaries(cacheDir, log));
  await mkdir(base, { recursive: true });
  return withFileLock(path.join(base, `port-${port}.lock`), { timeoutMs: 180_000, purpose: `starting MariaDB on port ${port}`, log }, async () => {
    const now = await probeMysql(HOST, port);
    if (now.kind === "mysql") return reused(port, now.version);
    if (now.kind !== "free") throw occupiedError(port, now);
    await initialise(bin, dataDir, log);
    log(`starting ${bin.label} on ${HOST}:${port}, data in ${dataDir}`);
    try {
      const child = await startChild(bin, port, dataDir, opts.startTimeoutMs ?? 60_000, log);
      return { url: `mysql://root@${HOST}:${port}/`, port, version: child.answer, startedByUs: true, stop: () => child.stop() };
    } catch (err) {
      if (err instanceof ServerStartError && err.addressInUse) {
        const winner = await probeMysql(HOST, port);
        if (winner.kind === "mysql") return reused(port, winner.version);
        throw occupiedError(port, winner);
      }
      throw err;
    }
  });
}
