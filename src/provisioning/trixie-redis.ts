// Redis 8 for machines whose distribution only has Redis 7: Debian 13 (trixie) builds 8.x with
// vector sets, and its binaries run unchanged on an older system when started through trixie's own
// dynamic loader with trixie's libraries. Everything lands in a private folder; the system's apt
// state, dpkg database and libraries are never touched.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { childEnvironment } from "../config/index.js";
import { findDebianArchive } from "./debian-archive.js";
import { withFileLock } from "./file-lock.js";
import { majorVersion } from "./probe-redis.js";
import { runCommand } from "./run-command.js";

// redis-tools carries the server executable (as redis-check-rdb, see serverCommand); the rest is
// its shared-library closure plus the trixie glibc and loader that the binaries require (>= 2.38).
// zlib1g is not in the field notes' list: without it libz silently comes from the host.
export const TRIXIE_PACKAGES = [
  "redis-tools",
  "libc6",
  "libstdc++6",
  "libgcc-s1",
  "libssl3t64",
  "libsystemd0",
  "libjemalloc2",
  "liblzf1",
  "libatomic1",
  "libcap2",
  "libgcrypt20",
  "liblzma5",
  "libzstd1",
  "liblz4-1",
  "libgpg-error0",
  "zlib1g",
] as const;

const MARKER = ".vitrine-fetched.json";

export interface FetchedPackage {
  file: string;
  bytes: number;
}

export interface TrixieRedis {
  root: string;
  version: string;
  archive: string;
  packages: FetchedPackage[];
  fetchedAt: string;
  /** How to start the server: command and the arguments that precede the server options. */
  serverCommand(): { command: string; args: string[] };
  cliCommand(): { command: string; args: string[] };
}

interface Marker {
  version: string;
  archive: string;
  packages: FetchedPackage[];
  fetchedAt: string;
}

function archLayout(): { triplet: string; loader: string } {
  if (process.platform === "linux" && process.arch === "x64") {
    return { triplet: "x86_64-linux-gnu", loader: "ld-linux-x86-64.so.2" };
  }
  if (process.platform === "linux" && process.arch === "arm64") {
    return { triplet: "aarch64-linux-gnu", loader: "ld-linux-aarch64.so.1" };
  }
  throw new Error(
    `cannot fetch Redis 8 from Debian on ${process.platform}/${process.arch} (only Linux x64 and arm64 are supported); ` +
      `set REDIS_URL to a Redis >= 8 server.`,
  );
}

function layout(root: string) {
  const { triplet, loader } = archLayout();
  const libDirs = [path.join(root, "usr/lib", triplet), path.join(root, "lib", triplet)].filter((d) => existsSync(d));
  const loaderPath =
    [path.join(root, "usr/lib", triplet, loader), path.join(root, "usr/lib64", loader), path.join(root, "lib64", loader)].find(
      (p) => existsSync(p),
    ) ?? path.join(root, "usr/lib", triplet, loader);
  const base = ["--library-path", libDirs.join(":")];
  return {
    loaderPath,
    // The server binary decides what to be from argv[0]. Debian ships it as redis-check-rdb in
    // redis-tools (redis-server is only a symlink in the redis-server package, which drags in
    // systemd units and maintainer scripts); started under that name it only checks RDB files and
    // exits with a usage message, so the loader presents it as redis-server. The full path keeps
    // INFO's "executable" pointing at the symlink made by fetchInto rather than at the cwd.
    server: () => ({
      command: loaderPath,
      args: [...base, "--argv0", path.join(root, "usr/bin/redis-server"), path.join(root, "usr/bin/redis-check-rdb")],
    }),
    cli: () => ({ command: loaderPath, args: [...base, path.join(root, "usr/bin/redis-cli")] }),
  };
}

function fromMarker(root: string, marker: Marker): TrixieRedis {
  const l = layout(root);
  return { root, ...marker, serverCommand: l.server, cliCommand: l.cli };
}

async function readMarker(root: string): Promise<Marker | undefined> {
  try {
    return JSON.parse(await readFile(path.join(root, MARKER), "utf8")) as Marker;
  } catch {
    return undefined;
  }
}

// A private apt configuration: own sources, lists, caches and an empty dpkg status, and the system's
// update hooks (appstream, packagekit...) cleared, so "apt-get update" changes nothing outside it.
function aptConfig(stage: string, archive: string): string {
  const q = (p: string) => `"${p}"`;
  return [
    `Dir::Etc::sourcelist ${q(path.join(stage, "sources.list"))};`,
    `Dir::Etc::sourceparts ${q(path.join(stage, "empty"))};`,
    `Dir::Etc::preferences ${q(path.join(stage, "empty", "preferences"))};`,
    `Dir::Etc::preferencesparts ${q(path.join(stage, "empty"))};`,
    `Dir::State::Lists ${q(path.join(stage, "lists"))};`,
    `Dir::State::status ${q(path.join(stage, "status"))};`,
    `Dir::Cache ${q(path.join(stage, "cache"))};`,
    // As root apt downloads as user _apt, which cannot write into a root-owned private folder.
    `APT::Sandbox::User "root";`,
    `Acquire::Retries "3";`,
    `#clear APT::Update::Pre-Invoke;`,
    `#clear APT::Update::Post-Invoke;`,
    `#clear APT::Update::Post-Invoke-Success;`,
    `// archive: ${archive}`,
    "",
  ].join("\n");
}

async function fetchInto(stage: string, archive: string, log: (line: string) => void): Promise<Marker> {
  for (const dir of ["empty", "lists/partial", "cache", "debs", "root"]) {
    await mkdir(path.join(stage, dir), { recursive: true });
  }
  await writeFile(path.join(stage, "sources.list"), `deb ${archive} trixie main\n`);
  await writeFile(path.join(stage, "status"), "");
  const confPath = path.join(stage, "apt.conf");
  await writeFile(confPath, aptConfig(stage, archive));
  const apt = ["-c", confPath, "-q"];
  // apt reads LANG for messages; keep them English so errors are greppable.
  const env = childEnvironment({ LC_ALL: "C", DEBIAN_FRONTEND: "noninteractive" });

  log(`apt-get update (trixie index from ${archive})`);
  try {
    await runCommand("apt-get", [...apt, "update"], { env, timeoutMs: 300_000 });
  } catch (err) {
    throw new Error(
      `cannot fetch Redis 8: reading Debian trixie's package index from ${archive} failed ` +
        `(no network to the archive, or apt lacks trixie's signing key: install a current debian-archive-keyring). ` +
        `Set REDIS_URL to a Redis >= 8 server to skip this. Details: ${(err as Error).message}`,
    );
  }

  log(`apt-get download ${TRIXIE_PACKAGES.join(" ")}`);
  const debs = path.join(stage, "debs");
  try {
    await runCommand("apt-get", [...apt, "download", ...TRIXIE_PACKAGES], { cwd: debs, env, timeoutMs: 600_000 });
  } catch (err) {
    throw new Error(
      `cannot fetch Redis 8: downloading trixie packages from ${archive} failed (a package may have been renamed in ` +
        `trixie; compare TRIXIE_PACKAGES with \`apt-cache depends redis-tools\` there). ` +
        `Set REDIS_URL to a Redis >= 8 server to skip this. Details: ${(err as Error).message}`,
    );
  }

  const packages: FetchedPackage[] = [];
  for (const file of (await readdir(debs)).filter((f) => f.endsWith(".deb")).sort()) {
    const full = path.join(debs, file);
    packages.push({ file: decodeURIComponent(file), bytes: (await stat(full)).size });
    await runCommand("dpkg-deb", ["-x", full, path.join(stage, "root")], { timeoutMs: 120_000 });
  }
  if (packages.length !== TRIXIE_PACKAGES.length) {
    throw new Error(
      `cannot fetch Redis 8: expected ${TRIXIE_PACKAGES.length} packages, apt-get downloaded ${packages.length} ` +
        `(${packages.map((p) => p.file).join(", ")}). Set REDIS_URL to a Redis >= 8 server.`,
    );
  }

  await symlink("redis-check-rdb", path.join(stage, "root/usr/bin/redis-server"));
  const l = layout(path.join(stage, "root"));
  const server = l.server();
  let versionLine: string;
  try {
    versionLine = (await runCommand(server.command, [...server.args, "--version"], { timeoutMs: 30_000 })).stdout;
  } catch (err) {
    throw new Error(
      `the Redis 8 fetched from Debian trixie does not run on this machine (a shared library may be missing from ` +
        `TRIXIE_PACKAGES). Set REDIS_URL to a Redis >= 8 server. Details: ${(err as Error).message}`,
    );
  }
  const version = /v=(\d+\.\d+\.\d+)/.exec(versionLine)?.[1];
  if (!version || majorVersion(version) < 8) {
    throw new Error(
      `Debian trixie's redis-tools reports "${versionLine.trim()}", not Redis >= 8. Set REDIS_URL to a Redis >= 8 server.`,
    );
  }
  // Libraries resolved from the host would make the result depend on the host's versions.
  const listed = await runCommand(l.loaderPath, [...server.args.slice(0, 2), "--list", server.args.at(-1) ?? ""], {
    timeoutMs: 30_000,
  }).catch(() => undefined);
  const outside = (listed?.stdout ?? "")
    .split("\n")
    .map((line) => /=>\s+(\/\S+)/.exec(line)?.[1])
    .filter((p): p is string => !!p && !p.startsWith(path.join(stage, "root")));
  if (outside.length) log(`note: the fetched redis loads host libraries: ${outside.join(", ")}`);

  const total = packages.reduce((n, p) => n + p.bytes, 0);
  log(`fetched ${packages.length} packages, ${(total / 1e6).toFixed(1)} MB: Redis ${version}`);
  return { version, archive, packages, fetchedAt: new Date().toISOString() };
}

export async function ensureTrixieRedis(opts: { cacheDir: string; log?: (line: string) => void }): Promise<TrixieRedis> {
  const log = opts.log ?? (() => undefined);
  const base = path.join(path.resolve(opts.cacheDir), "redis8");
  const root = path.join(base, "root");
  archLayout();

  const ready = await readMarker(root);
  if (ready) return fromMarker(root, ready);

  await mkdir(base, { recursive: true });
  return withFileLock(path.join(base, "fetch.lock"), { timeoutMs: 15 * 60_000, purpose: "the Redis 8 download", log }, async () => {
    // Another process may have finished while this one waited for the lock.
    const done = await readMarker(root);
    if (done) return fromMarker(root, done);

    // Holding the lock, any stage folder or marker-less root is debris from a crashed run.
    for (const name of await readdir(base)) {
      if (name.startsWith(".stage-")) await rm(path.join(base, name), { recursive: true, force: true });
    }
    await rm(root, { recursive: true, force: true });

    const archive = await findDebianArchive();
    const stage = await mkdtemp(path.join(base, ".stage-"));
    try {
      const marker = await fetchInto(stage, archive, log);
      await writeFile(path.join(stage, "root", MARKER), JSON.stringify(marker, null, 2));
      // The marker travels inside the folder, so one rename publishes a complete tree or nothing.
      await rename(path.join(stage, "root"), root);
      return fromMarker(root, marker);
    } finally {
      await rm(stage, { recursive: true, force: true });
    }
  });
}
