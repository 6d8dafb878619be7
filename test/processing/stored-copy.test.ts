// What the service stores for a fetched photo: the file itself when it is a plain JPEG without
// metadata, the same bytes minus the metadata when it is upright, a re-encoded upright copy
// without metadata otherwise. Real photos (scikit-image's
// samples), scaled to the size shops upload.
import { createHash } from "node:crypto";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { normaliseImage, storedCopy, UndecodableImageError } from "../../src/processing/index.js";
import { cacheDir } from "../support/cache-dir.js";
import { samplePhotos } from "../support/sample-photos.js";

let photo: Buffer;
const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const kindOf = async (bytes: Buffer) => (await storedCopy(bytes)).kind;
const pixels = (bytes: Buffer) => sharp(bytes).raw().toBuffer();

beforeAll(async () => {
  const photos = await samplePhotos(cacheDir);
  // A shop's product photo: 900x1200, quality 90, no metadata (sharp writes none unless asked).
  photo = await sharp(photos.coffee!).resize(900, 1200, { fit: "cover" }).jpeg({ quality: 90 }).toBuffer();
}, 60_000);

describe("stored copy", () => {
  it("keeps a plain 900x1200 JPEG byte for byte", async () => {
    const copy = await storedCopy(photo);
    expect(copy.kind).toBe("as fetched");
    expect(sha(copy.bytes)).toBe(sha(photo));
  });

  it("keeps progressive and greyscale JPEGs, and one with an sRGB colour profile", async () => {
    expect(await kindOf(await sharp(photo).jpeg({ progressive: true }).toBuffer())).toBe("as fetched");
    expect(await kindOf(await sharp(photo).greyscale().jpeg().toBuffer())).toBe("as fetched");
    expect(await kindOf(await sharp(photo).withIccProfile("srgb").jpeg().toBuffer())).toBe("as fetched");
  });

  it("re-encodes a sideways photo with an EXIF orientation: upright, without the metadata (GPS, camera)", async () => {
    // Stored sideways with orientation 6 ("rotate 90° clockwise to show"), as phones do.
    const sideways = await sharp(photo)
      .rotate(-90)
      .withExif({ IFD0: { Make: "PhoneCo", Model: "Pocket 12" }, IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 0/1" } })
      .withMetadata({ orientation: 6 })
      .jpeg({ quality: 90 })
      .toBuffer();
    const before = await sharp(sideways).metadata();
    expect([before.width, before.height, before.orientation]).toEqual([1200, 900, 6]);
    expect(before.exif?.toString("latin1")).toContain("PhoneCo");

    const copy = await storedCopy(sideways);
    expect(copy.kind).toBe("re-encoded");
    const after = await sharp(copy.bytes).metadata();
    expect(after.format).toBe("jpeg");
    expect([after.autoOrient.width, after.autoOrient.height]).toEqual([768, 1024]);
    expect([after.width, after.height]).toEqual([768, 1024]);
    expect(after.orientation).toBeUndefined();
    expect(after.exif).toBeUndefined();
    expect(copy.bytes.toString("latin1")).not.toContain("PhoneCo");
    // Upright: the same pixels as the upright original, up to JPEG losses.
    const [a, b] = await Promise.all([copy.bytes, photo].map((img) => sharp(img).resize(48, 64, { fit: "fill" }).raw().toBuffer()));
    let diff = 0;
    for (let i = 0; i < a!.length; i++) diff += Math.abs(a![i]! - b![i]!);
    expect(diff / a!.length).toBeLessThan(6);
  });

  it("removes EXIF, XMP and comments from an upright JPEG without decoding it: same image data, no metadata", async () => {
    const tagged = await sharp(photo)
      .withExif({ IFD0: { Make: "PhoneCo", Model: "Pocket 12" }, IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 0/1" } })
      .jpeg({ quality: 90 })
      .toBuffer();
    const withXmp = await sharp(photo).withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">Shop Ltd</rdf:RDF></x:xmpmeta>').jpeg().toBuffer();
    const withComment = Buffer.concat([photo.subarray(0, 2), Buffer.from([0xff, 0xfe, 0x00, 0x0b]), Buffer.from("Shop Ltd!"), photo.subarray(2)]);
    for (const [input, secret] of [[tagged, "PhoneCo"], [withXmp, "Shop Ltd"], [withComment, "Shop Ltd"]] as const) {
      expect(input.toString("latin1")).toContain(secret);
      const copy = await storedCopy(input);
      expect(copy.kind).toBe("metadata removed");
      expect(copy.bytes.toString("latin1")).not.toContain(secret);
      const meta = await sharp(copy.bytes).metadata();
      expect([meta.exif, meta.xmp, meta.comments]).toEqual([undefined, undefined, undefined]);
      expect(copy.bytes.length).toBeLessThan(input.length);
      expect(Buffer.compare(await pixels(copy.bytes), await pixels(input))).toBe(0);
    }
  });

  it("re-encodes oversized photos, anything not a JPEG, and a JPEG with data after its end", async () => {
    const large = await sharp(photo).resize(1800, 2400).jpeg({ quality: 80 }).toBuffer();
    const copy = await storedCopy(large);
    expect(copy.kind).toBe("re-encoded");
    const meta = await sharp(copy.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([768, 1024]);
    const png = await storedCopy(await sharp(photo).png().toBuffer());
    expect(png.kind).toBe("re-encoded");
    expect((await sharp(png.bytes).metadata()).format).toBe("jpeg");
    // As phones store a second picture (with its own EXIF) after the first one's end.
    const trailing = Buffer.concat([photo, await sharp(photo).withExif({ IFD0: { Make: "PhoneCo" } }).jpeg().toBuffer()]);
    const cleaned = await storedCopy(trailing);
    expect(cleaned.kind).toBe("re-encoded");
    expect(cleaned.bytes.toString("latin1")).not.toContain("PhoneCo");
  });

  it("does not keep a truncated JPEG, and reports it undecodable", async () => {
    const truncated = photo.subarray(0, Math.floor(photo.length * 0.6));
    await expect(storedCopy(truncated)).rejects.toBeInstanceOf(UndecodableImageError);
    await expect(normaliseImage(Buffer.from("not an image at all"))).rejects.toBeInstanceOf(UndecodableImageError);
  });
});
