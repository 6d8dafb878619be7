import sharp from "sharp";

/** Largest side of the stored copy: plenty for a product grid and a detail view. */
const MAX_SIDE = 1024;
/** Refuse decompression bombs: a small file that decodes to a gigantic bitmap. */
const MAX_INPUT_PIXELS = 50_000_000;

export class UndecodableImageError extends Error {}

/**
 * Decodes any supported image, applies its EXIF orientation, bounds its size and re-encodes it
 * as a JPEG on white: one predictable format for storage, browsers and the encoders.
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
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new UndecodableImageError(`image could not be decoded (${detail})`);
  }
}
