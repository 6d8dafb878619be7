// Decodes any image sharp reads (JPEG, PNG, WebP, GIF, AVIF, TIFF...) to raw 8-bit sRGB at a
// fixed square size, the common first step of the image and colour encoders.
import sharp from "sharp";

const WHITE = { r: 255, g: 255, b: 255, alpha: 1 };

/**
 * "fill" stretches to size x size ignoring the aspect ratio, which is what nsfwjs (and so the
 * model's fine-tuning) did, and which beat letterboxing and centre-cropping on product photos.
 */
export async function decodeRgb(image: Buffer, size: number): Promise<Uint8Array> {
  let decoded;
  try {
    // failOn "none": a truncated JPEG still shows the product. The pixel limit (10k x 10k) refuses
    // decompression bombs before libvips allocates for them.
    decoded = await sharp(image, { failOn: "none", limitInputPixels: 100_000_000 })
      .rotate() // EXIF orientation
      .flatten({ background: WHITE }) // transparency becomes the studio white it stands for
      .toColourspace("srgb")
      .resize(size, size, { fit: "fill", kernel: "lanczos3" })
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw new ImageDecodeError(`cannot decode the image (${image.length} bytes): ${(err as Error).message}`, { cause: err });
  }
  const { data, info } = decoded;
  if (info.channels !== 3 || info.width !== size || info.height !== size || data.length !== size * size * 3) {
    throw new ImageDecodeError(`unexpected decode result ${info.width}x${info.height}x${info.channels} (${data.length} bytes)`);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** decodeRgb's HWC bytes as CHW floats in [0, 1], the layout ONNX Runtime's image models take. */
export function rgbToChw(rgb: Uint8Array, size: number): Float32Array {
  const plane = size * size;
  const chw = new Float32Array(3 * plane);
  for (let p = 0, i = 0; p < plane; p++, i += 3) {
    chw[p] = rgb[i]! / 255;
    chw[plane + p] = rgb[i + 1]! / 255;
    chw[2 * plane + p] = rgb[i + 2]! / 255;
  }
  return chw;
}

/** The input is not an image sharp can read; callers report it as the product's fault, not ours. */
export class ImageDecodeError extends Error {
  override readonly name = "ImageDecodeError";
}
