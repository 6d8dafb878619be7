/**
 * Recognises image formats by their leading bytes. Servers mislabel content all the time, and
 * an HTML error page served as image/jpeg must not reach the image pipeline, so the bytes, not
 * the Content-Type, decide.
 */

export type ImageFormat = "jpeg" | "png" | "gif" | "webp" | "avif" | "bmp" | "tiff";

/** Enough leading bytes for every signature below, including a typical ftyp box. */
export const SIGNATURE_BYTES = 64;

export const CANONICAL_CONTENT_TYPE: Record<ImageFormat, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  bmp: "image/bmp",
  tiff: "image/tiff",
};

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const ISO_BMFF_IMAGE_BRANDS = new Set(["avif", "avis", "heic", "heix", "mif1"]);
/** Sizes of the BMP info headers that exist (BITMAPCOREHEADER .. BITMAPV5HEADER). */
const BMP_INFO_HEADER_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

export function detectImageFormat(bytes: Uint8Array): ImageFormat | null {
  const ascii = (start: number, end: number) => String.fromCharCode(...bytes.subarray(start, end));
  const startsWith = (signature: readonly number[], at = 0) =>
    bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);

  if (startsWith([0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(PNG)) return "png";
  if (ascii(0, 6) === "GIF87a" || ascii(0, 6) === "GIF89a") return "gif";
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "webp";
  if (startsWith([0x49, 0x49, 0x2a, 0x00]) || startsWith([0x4d, 0x4d, 0x00, 0x2a])) return "tiff";
  if (isIsoBmffImage(bytes, ascii)) return "avif";
  // "BM" alone matches plenty of text, so the info header size must be a real one too.
  if (ascii(0, 2) === "BM" && bytes.length >= 18 && BMP_INFO_HEADER_SIZES.has(readUint32LE(bytes, 14))) return "bmp";
  return null;
}

/**
 * AVIF and HEIF share the ISO-BMFF container: an "ftyp" box whose major or compatible brands
 * name an image profile. HEIF has no format of its own in the pipeline, so it is reported as
 * "avif", the closest sibling.
 */
function isIsoBmffImage(bytes: Uint8Array, ascii: (start: number, end: number) => string): boolean {
  if (bytes.length < 12 || ascii(4, 8) !== "ftyp") return false;
  if (ISO_BMFF_IMAGE_BRANDS.has(ascii(8, 12))) return true;
  // Compatible brands follow the major brand and minor version, up to the end of the box.
  const boxEnd = Math.min(readUint32BE(bytes, 0), bytes.length);
  for (let at = 16; at + 4 <= boxEnd; at += 4) {
    if (ISO_BMFF_IMAGE_BRANDS.has(ascii(at, at + 4))) return true;
  }
  return false;
}

function readUint32BE(bytes: Uint8Array, at: number): number {
  return (((bytes[at] ?? 0) << 24) | ((bytes[at + 1] ?? 0) << 16) | ((bytes[at + 2] ?? 0) << 8) | (bytes[at + 3] ?? 0)) >>> 0;
}

function readUint32LE(bytes: Uint8Array, at: number): number {
  return (((bytes[at + 3] ?? 0) << 24) | ((bytes[at + 2] ?? 0) << 16) | ((bytes[at + 1] ?? 0) << 8) | (bytes[at] ?? 0)) >>> 0;
}

/** The media type without parameters, lower-cased: "image/png; q=1" -> "image/png". */
export function mediaTypeOf(header: string | undefined): string {
  return (header ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/**
 * Whether a declared type is worth downloading. Absent and generic binary types are let through
 * because many storage services serve images that way; the magic bytes settle it afterwards.
 */
export function isAcceptableMediaType(mediaType: string): boolean {
  return (
    mediaType === "" ||
    mediaType.startsWith("image/") ||
    mediaType === "application/octet-stream" ||
    mediaType === "binary/octet-stream"
  );
}
