import sharp from "sharp";
import { readJpegStructure } from "./jpeg-structure.js";

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
 * flag, which only say how to show the pixels. Anything else (EXIF with its GPS position, camera
 * serial and orientation, XMP, IPTC, Photoshop data, comments, embedded previews) makes the
 * service re-encode, which drops it.
 */
const HARMLESS_SEGMENTS = new Set(["APP0:JFIF", "APP2:ICC_PROFILE", "APP14:Adobe"]);
/** Huffman-coded baseline, extended and progressive: what every browser shows. */
const PLAIN_FRAMES = new Set([0xc0, 0xc1, 0xc2]);

export class UndecodableImageError extends Error {}

export interface StoredCopy {
  bytes: Buffer;
  /** The fetched file itself, unchanged (no decode, no re-encode). */
  asFetched: boolean;
}

/**
 * The copy the service stores and serves for a fetched image. A plain JPEG of sensible size, with
 * no metadata and no orientation to apply, is kept byte for byte: decoding and re-encoding a
 * full-size photo cost about 12 ms of CPU, as much as the whole embedding, and only lost quality.
 * Everything else is normalised (normaliseImage).
 */
export async function storedCopy(bytes: Buffer): Promise<StoredCopy> {
  if (canKeepAsFetched(bytes)) return { bytes, asFetched: true };
  return { bytes: await normaliseImage(bytes), asFetched: false };
}

export function canKeepAsFetched(bytes: Buffer): boolean {
  if (bytes.length > KEEP_MAX_BYTES) return false;
  const jpeg = readJpegStructure(bytes);
  return (
    jpeg !== undefined &&
    jpeg.complete &&
    PLAIN_FRAMES.has(jpeg.frame) &&
    (jpeg.components === 1 || jpeg.components === 3) &&
    Math.max(jpeg.width, jpeg.height) <= KEEP_MAX_SIDE &&
    jpeg.width > 0 &&
    jpeg.height > 0 &&
    jpeg.segments.every((s) => HARMLESS_SEGMENTS.has(`${s.marker}:${s.identifier}`))
  );
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
