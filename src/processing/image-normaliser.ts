import sharp from "sharp";
import { readJpegStructure, withoutSegments } from "./jpeg-structure.js";
import type { JpegSegment, JpegStructure } from "./jpeg-structure.js";

/** Largest side of a re-encoded stored copy: plenty for a product grid and a detail view. */
const MAX_SIDE = 1024;
/** Refuse decompression bombs: a small file that decodes to a gigantic bitmap. */
const MAX_INPUT_PIXELS = 50_000_000;
/**
 * A JPEG as fetched is stored unchanged up to this size (see storedCopy): a 2x detail view, and
 * what shops upload (540x720 to 1872x2808 measured; 900x1200 typical) is mostly within it.
 */
const KEEP_MAX_SIDE = 2048;
const KEEP_MAX_BYTES = 2 * 1024 * 1024;
/**
 * Segments a kept file may carry: JFIF's header, a colour profile and Adobe's colour-transform
 * flag, which only say how to show the pixels. Every other APP segment and comment (EXIF with its
 * GPS position, camera serial and orientation, XMP, IPTC, Photoshop data, embedded previews) is
 * metadata: removed, or the photo re-encoded.
 */
const HARMLESS_SEGMENTS = new Set(["APP0:JFIF", "APP2:ICC_PROFILE", "APP14:Adobe"]);
/** Huffman-coded baseline, extended and progressive: what every browser shows. */
const PLAIN_FRAMES = new Set([0xc0, 0xc1, 0xc2]);

export class UndecodableImageError extends Error {}

export interface StoredCopy {
  bytes: Buffer;
  /**
   * "as fetched": the file itself; "metadata removed": the same image data without its metadata
   * segments (no decode either); "re-encoded": decoded and normalised (normaliseImage).
   */
  kind: "as fetched" | "metadata removed" | "re-encoded";
}

/**
 * The copy the service stores and serves for a fetched image. A plain, upright JPEG of sensible
 * size is kept as it is, its metadata segments removed byte-wise: decoding and re-encoding a
 * full-size photo cost about 12 ms of CPU, as much as the whole embedding, and only lost quality.
 * Everything else (other formats, larger photos, an EXIF orientation to apply) is normalised.
 */
export async function storedCopy(bytes: Buffer): Promise<StoredCopy> {
  const jpeg = plainJpeg(bytes);
  if (jpeg) {
    const metadata = jpeg.segments.filter(isMetadata);
    if (metadata.length === 0) return { bytes, kind: "as fetched" };
    // Only metadata says which way up a photo is (EXIF orientation): kept only when upright.
    if (await isUpright(bytes)) return { bytes: withoutSegments(bytes, jpeg, isMetadata), kind: "metadata removed" };
  }
  return { bytes: await normaliseImage(bytes), kind: "re-encoded" };
}

/** The file's structure when it is a JPEG that browsers show as it is, within the size kept. */
export function plainJpeg(bytes: Buffer): JpegStructure | undefined {
  if (bytes.length > KEEP_MAX_BYTES) return undefined;
  const jpeg = readJpegStructure(bytes);
  const plain =
    jpeg !== undefined &&
    jpeg.complete &&
    PLAIN_FRAMES.has(jpeg.frame) &&
    (jpeg.components === 1 || jpeg.components === 3) &&
    jpeg.width > 0 &&
    jpeg.height > 0 &&
    Math.max(jpeg.width, jpeg.height) <= KEEP_MAX_SIDE;
  return plain ? jpeg : undefined;
}

function isMetadata(segment: JpegSegment): boolean {
  return segment.kind !== "other" && !HARMLESS_SEGMENTS.has(`${segment.kind}:${segment.identifier}`);
}

async function isUpright(bytes: Buffer): Promise<boolean> {
  try {
    const { orientation } = await sharp(bytes).metadata();
    return orientation === undefined || orientation === 1;
  } catch {
    return false;
  }
}

/**
 * Decodes any supported image, applies its EXIF orientation, bounds its size and re-encodes it
 * as a JPEG on white without metadata: one predictable format for storage and browsers.
 */
export async function normaliseImage(bytes: Buffer): Promise<Buffer> {
  try {
    return await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error" })
      .rotate()
      .resize({ width: MAX_SIDE, height: MAX_SIDE, fit: "inside", withoutEnlargement: true })
      .flatten({ background: "#ffffff" })
      .jpeg({ quality: 85 })
      .toBuffer();
  } catch (error) {
    throw undecodable(error);
  }
}

export function undecodable(error: unknown): UndecodableImageError {
  const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return new UndecodableImageError(`image could not be decoded (${detail})`);
}
