// Distinct product photos of the size shops upload, derived from fashion-dev's thumbnails: each
// index gets its own crop, mirror and colour shift, scaled to 900x1200 and saved as a quality-90
// JPEG. Files are written once into a cache folder (never the repository) and reused by later
// runs; an interrupted generation resumes where it stopped (files appear by atomic rename).
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { seededRandom } from "../../test/support/random.js";

export const PHOTO_WIDTH = 900;
export const PHOTO_HEIGHT = 1200;
/** Changes whenever the recipe below changes, so a cache of older photos is not mixed in. */
const RECIPE = "v2";
const PER_FOLDER = 1000;

export interface SourceItem {
  image: string;
  title: string;
  articleType: string;
  baseColour: string;
  gender: string;
}

export async function readSourceItems(datasetDir: string): Promise<SourceItem[]> {
  const lines = (await readFile(join(datasetDir, "items.jsonl"), "utf8")).split("\n").filter((l) => l.trim());
  return lines.map((line) => {
    const item = JSON.parse(line) as Record<string, string>;
    return { image: join(datasetDir, item.image!), title: item.productDisplayName!, articleType: item.articleType!, baseColour: item.baseColour!, gender: item.gender! };
  });
}

export function photoPath(cacheDir: string, index: number): string {
  return join(cacheDir, RECIPE, String(Math.floor(index / PER_FOLDER)), `${index}.jpg`);
}

async function makePhoto(source: Buffer, index: number): Promise<Buffer> {
  // Seeded by the index: photo i is the same photo on every machine and run.
  const rnd = seededRandom(index * 2654435761 + 1);
  const image = sharp(source);
  const { width = 0, height = 0 } = await image.metadata();
  const cropW = Math.max(16, Math.round(width * (0.78 + 0.22 * rnd())));
  const cropH = Math.max(16, Math.round(height * (0.78 + 0.22 * rnd())));
  const left = Math.floor((width - cropW) * rnd());
  const top = Math.floor((height - cropH) * rnd());
  let pipeline = image.extract({ left, top, width: cropW, height: cropH });
  if (rnd() < 0.5) pipeline = pipeline.flop();
  // The colour shift on the small crop, then the upscale: sharp would otherwise shift colours at
  // full size (through LCh), which was most of a photo's cost.
  const small = await pipeline
    .modulate({ brightness: 0.92 + 0.16 * rnd(), saturation: 0.85 + 0.3 * rnd(), hue: Math.round(-12 + 24 * rnd()) })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return sharp(small.data, { raw: { width: small.info.width, height: small.info.height, channels: small.info.channels } })
    // Bilinear: half the cost of lanczos3 when enlarging 4x, and nothing here needs its sharpness.
    .resize(PHOTO_WIDTH, PHOTO_HEIGHT, { fit: "fill", kernel: "linear" })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}

/**
 * Makes sure photos 0..n-1 exist under cacheDir; returns how many were generated now. Work runs
 * on libuv's threads (sharp), several photos at once, so it uses every core.
 */
export async function ensurePhotos(
  cacheDir: string,
  items: readonly SourceItem[],
  n: number,
  progress: (done: number, made: number) => void = () => undefined,
): Promise<number> {
  let next = 0;
  let done = 0;
  let made = 0;
  const lane = async () => {
    for (;;) {
      const index = next++;
      if (index >= n) return;
      const path = photoPath(cacheDir, index);
      if (!(await exists(path))) {
        const bytes = await makePhoto(await readFile(items[index % items.length]!.image), index);
        await mkdir(join(path, ".."), { recursive: true });
        const temporary = `${path}.${process.pid}.tmp`;
        await writeFile(temporary, bytes);
        await rename(temporary, path);
        made++;
      }
      if (++done % 1000 === 0) progress(done, made);
    }
  };
  await Promise.all(Array.from({ length: availableParallelism() * 2 }, lane));
  return made;
}
