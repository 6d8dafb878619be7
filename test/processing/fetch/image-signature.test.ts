import sharp from "sharp";
import { describe, expect, it } from "vitest";
import {
  detectImageFormat,
  isAcceptableMediaType,
  mediaTypeOf,
} from "../../../src/processing/fetch/image-signature.js";

const base = () => sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 10, g: 120, b: 30 } } });

function bmp(): Buffer {
  // A 1x1 24-bit BMP: file header, BITMAPINFOHEADER (40 bytes), one padded pixel row.
  const bytes = Buffer.alloc(58);
  bytes.write("BM", 0, "latin1");
  bytes.writeUInt32LE(58, 2);
  bytes.writeUInt32LE(54, 10);
  bytes.writeUInt32LE(40, 14);
  bytes.writeInt32LE(1, 18);
  bytes.writeInt32LE(1, 22);
  bytes.writeUInt16LE(1, 26);
  bytes.writeUInt16LE(24, 28);
  return bytes;
}

function ftyp(major: string, compatible: string[]): Buffer {
  const size = 16 + 4 * compatible.length;
  const box = Buffer.alloc(size);
  box.writeUInt32BE(size, 0);
  box.write("ftyp", 4, "latin1");
  box.write(major, 8, "latin1");
  compatible.forEach((brand, i) => box.write(brand, 16 + 4 * i, "latin1"));
  return box;
}

describe("detectImageFormat", () => {
  it("recognises images encoded by sharp", async () => {
    expect(detectImageFormat(await base().jpeg().toBuffer())).toBe("jpeg");
    expect(detectImageFormat(await base().png().toBuffer())).toBe("png");
    expect(detectImageFormat(await base().gif().toBuffer())).toBe("gif");
    expect(detectImageFormat(await base().webp().toBuffer())).toBe("webp");
    expect(detectImageFormat(await base().avif().toBuffer())).toBe("avif");
    expect(detectImageFormat(await base().tiff().toBuffer())).toBe("tiff");
  });

  it("recognises hand-made signatures", () => {
    expect(detectImageFormat(Buffer.from("GIF87a\x01\x00", "latin1"))).toBe("gif");
    expect(detectImageFormat(Buffer.from("MM\x00\x2a\x00\x00\x00\x08", "latin1"))).toBe("tiff");
    expect(detectImageFormat(Buffer.from("II\x2a\x00\x08\x00\x00\x00", "latin1"))).toBe("tiff");
    expect(detectImageFormat(bmp())).toBe("bmp");
    expect(detectImageFormat(ftyp("avis", ["avis", "msf1"]))).toBe("avif");
    expect(detectImageFormat(ftyp("heic", ["mif1", "heic"]))).toBe("avif");
    expect(detectImageFormat(ftyp("mif1", ["avif"]))).toBe("avif");
    expect(detectImageFormat(ftyp("msf1", ["miaf", "avif"]))).toBe("avif");
  });

  it.each([
    ["an empty buffer", Buffer.alloc(0)],
    ["HTML", Buffer.from("<!doctype html><html></html>")],
    ["JSON", Buffer.from('{"error":"not found"}')],
    ["a truncated JPEG marker", Buffer.from([0xff, 0xd8])],
    ["a truncated PNG signature", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a])],
    ["GIF90a", Buffer.from("GIF90a")],
    ["a RIFF that is not WebP", Buffer.from("RIFF\x24\x00\x00\x00WAVEfmt ", "latin1")],
    ["an MP4 video", ftyp("isom", ["isom", "mp41"])],
    ["text starting with BM", Buffer.from("BMW owners club newsletter, issue 12")],
    ["a PDF", Buffer.from("%PDF-1.7\n")],
  ])("rejects %s", (_name, bytes) => {
    expect(detectImageFormat(bytes)).toBeNull();
  });
});

describe("media types", () => {
  it("normalises the header", () => {
    expect(mediaTypeOf("Image/PNG; charset=binary")).toBe("image/png");
    expect(mediaTypeOf(undefined)).toBe("");
    expect(mediaTypeOf("")).toBe("");
  });

  it.each([
    ["", true],
    ["image/jpeg", true],
    ["image/svg+xml", true],
    ["application/octet-stream", true],
    ["binary/octet-stream", true],
    ["text/html", false],
    ["application/json", false],
    ["video/mp4", false],
  ])("%j acceptable: %s", (mediaType, expected) => {
    expect(isAcceptableMediaType(mediaType)).toBe(expected);
  });
});
