// Real photographs for tests and the demo catalog (a cat, a coffee cup, two views of one motorcycle...),
// taken from scikit-image's sample data in Debian's python3-skimage package. Fetched once per
// cache directory with `apt-get download` (the machine's own apt sources; nothing is installed)
// and unpacked with dpkg-deb; they never enter the repository.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { childEnvironment } from "../config/index.js";
import { findDebianArchive } from "./debian-archive.js";
import { withFileLock } from "./file-lock.js";
import { runCommand } from "./run-command.js";

export const SAMPLE_PHOTO_FILES = {
  astronaut: "astronaut.png",
  chelsea: "chelsea.png", // a cat
  coffee: "coffee.png",
  motorcycle_left: "motorcycle_left.png",
  motorcycle_right: "motorcycle_right.png", // the same motorcycle from a slightly different viewpoint
  rocket: "rocket.jpg",
} as const;

export type SamplePhotoName = keyof typeof SAMPLE_PHOTO_FILES;

const PACKAGE = "python3-skimage";
const DATA_DIR = "usr/lib/python3/dist-packages/skimage/data";
// Used when apt has no index entry for the package (a container whose apt lists were never
// fetched): Debian 12's build, straight from the archive apt is configured with.
const PINNED_DEB = {
  path: "pool/main/s/skimage/python3-skimage_0.19.3-8_all.deb",
  sha256: "728d88c3e3440f1f3712de0805dc834d29248ff07e1eec8c0f3da07606f752f9",
};

export async function samplePhotos(cacheDir: string): Promise<Record<SamplePhotoName, Buffer>> {
  const dir = path.join(path.resolve(cacheDir), "sample-photos");
  if (!complete(dir)) {
    await mkdir(path.dirname(dir), { recursive: true });
    await withFileLock(`${dir}.lock`, { timeoutMs: 5 * 60_000, purpose: "fetching sample photos" }, async () => {
      if (!complete(dir)) await fetchInto(dir);
    });
  }
  const entries = await Promise.all(
    Object.entries(SAMPLE_PHOTO_FILES).map(async ([name, file]) => [name, await readFile(path.join(dir, file))] as const),
  );
  return Object.fromEntries(entries) as Record<SamplePhotoName, Buffer>;
}

function complete(dir: string): boolean {
  return Object.values(SAMPLE_PHOTO_FILES).every((f) => existsSync(path.join(dir, f)));
}

async function fetchInto(dir: string): Promise<void> {
  const stage = await mkdtemp(`${dir}.tmp-`);
  try {
    const deb = await downloadDeb(stage);
    const root = path.join(stage, "root");
    await runCommand("dpkg-deb", ["-x", deb, root], { timeoutMs: 120_000 });
    const photos = path.join(stage, "photos");
    await mkdir(photos);
    for (const file of Object.values(SAMPLE_PHOTO_FILES)) await copyFile(path.join(root, DATA_DIR, file), path.join(photos, file));
    // The folder appears complete or not at all.
    await rm(dir, { recursive: true, force: true });
    await rename(photos, dir);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

async function downloadDeb(stage: string): Promise<string> {
  try {
    await runCommand("apt-get", ["download", "-q", PACKAGE], { cwd: stage, timeoutMs: 300_000, env: childEnvironment({ LC_ALL: "C" }) });
    const deb = (await readdir(stage)).find((f) => f.startsWith(`${PACKAGE}_`) && f.endsWith(".deb"));
    if (deb) return path.join(stage, deb);
  } catch {
    // fall through to the pinned file
  }
  const url = `${await findDebianArchive()}/${PINNED_DEB.path}`;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`cannot fetch the sample photos: GET ${url} answered ${res.status}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  if (sha256 !== PINNED_DEB.sha256) throw new Error(`${url}: sha256 ${sha256}, expected ${PINNED_DEB.sha256}`);
  const file = path.join(stage, path.basename(PINNED_DEB.path));
  await writeFile(file, bytes);
  return file;
}
