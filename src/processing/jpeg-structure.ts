// Reads a JPEG's segment markers (not its pixels) to tell whether the file can be served as it
// is: which segments come before the image data, how it is coded, and whether it is complete.

export interface JpegStructure {
  /** APPn and COM segments, by name: "APP0", "APP1", ..., "COM". */
  segments: { marker: string; identifier: string }[];
  /** Start-of-frame marker: 0xc0 baseline, 0xc1 extended, 0xc2 progressive, others rarely shown by browsers. */
  frame: number;
  components: number;
  width: number;
  height: number;
  /** The file ends with the end-of-image marker (it was not cut short). */
  complete: boolean;
}

const SOI = 0xd8;
const SOS = 0xda;
const EOI = 0xd9;

/** The structure of a JPEG, or undefined when the bytes are not a well-formed JPEG header. */
export function readJpegStructure(bytes: Buffer): JpegStructure | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== SOI) return undefined;
  const segments: JpegStructure["segments"] = [];
  let frame: Pick<JpegStructure, "frame" | "components" | "width" | "height"> | undefined;
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    const length = bytes.readUInt16BE(at + 2);
    if (length < 2 || at + 2 + length > bytes.length) return undefined;
    const body = bytes.subarray(at + 4, at + 2 + length);
    if (marker >= 0xe0 && marker <= 0xef) {
      segments.push({ marker: `APP${marker - 0xe0}`, identifier: identifierOf(body) });
    } else if (marker === 0xfe) {
      segments.push({ marker: "COM", identifier: "" });
    } else if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (body.length < 6) return undefined;
      frame = { frame: marker, height: body.readUInt16BE(1), width: body.readUInt16BE(3), components: body[5]! };
    } else if (marker === SOS) {
      if (!frame) return undefined;
      const complete = bytes[bytes.length - 2] === 0xff && bytes[bytes.length - 1] === EOI;
      return { segments, ...frame, complete };
    }
    at += 2 + length;
  }
  return undefined;
}

/** The NUL-terminated name APP segments start with ("JFIF", "Exif", "ICC_PROFILE", "Adobe", ...). */
function identifierOf(body: Buffer): string {
  const end = body.indexOf(0, 0);
  return body.subarray(0, end === -1 ? Math.min(body.length, 32) : Math.min(end, 32)).toString("latin1");
}
