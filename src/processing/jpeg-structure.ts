// Reads a JPEG's segment markers (not its pixels) to tell whether the file can be served as it
// is, and rewrites it without chosen segments. Pure byte work: no decoding.

export interface JpegSegment {
  /** "APP0".."APP15", "COM", or "other" (tables, frame header: needed to decode). */
  kind: string;
  /** The NUL-terminated name an APP segment starts with ("JFIF", "Exif", "ICC_PROFILE", ...). */
  identifier: string;
  start: number;
  end: number;
}

export interface JpegStructure {
  /** Every segment between the start-of-image marker and the first scan. */
  segments: JpegSegment[];
  /** Where the first scan's header starts: everything from here on is image data. */
  scanStart: number;
  /** Start-of-frame marker: 0xc0 baseline, 0xc1 extended, 0xc2 progressive, others rarely shown by browsers. */
  frame: number;
  components: number;
  width: number;
  height: number;
  /**
   * The image's end-of-image marker is the file's last two bytes: it was not cut short, and
   * nothing rides after it (phones append further images with their own EXIF there).
   */
  complete: boolean;
}

const SOI = 0xd8;
const SOS = 0xda;
const EOI = 0xd9;

/** The structure of a JPEG, or undefined when the bytes are not a well-formed JPEG header. */
export function readJpegStructure(bytes: Buffer): JpegStructure | undefined {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== SOI) return undefined;
  const segments: JpegSegment[] = [];
  let frame: Pick<JpegStructure, "frame" | "components" | "width" | "height"> | undefined;
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === SOS) {
      if (!frame) return undefined;
      return { segments, scanStart: at, ...frame, complete: endOfImage(bytes, at) === bytes.length - 2 };
    }
    const length = bytes.readUInt16BE(at + 2);
    if (length < 2 || at + 2 + length > bytes.length) return undefined;
    const body = bytes.subarray(at + 4, at + 2 + length);
    const segment = { kind: "other", identifier: "", start: at, end: at + 2 + length };
    if (marker >= 0xe0 && marker <= 0xef) {
      segment.kind = `APP${marker - 0xe0}`;
      segment.identifier = identifierOf(body);
    } else if (marker === 0xfe) {
      segment.kind = "COM";
    } else if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (body.length < 6) return undefined;
      frame = { frame: marker, height: body.readUInt16BE(1), width: body.readUInt16BE(3), components: body[5]! };
    }
    segments.push(segment);
    at = segment.end;
  }
  return undefined;
}

/** The same JPEG without the segments `drop` selects; the image data is untouched. */
export function withoutSegments(bytes: Buffer, jpeg: JpegStructure, drop: (segment: JpegSegment) => boolean): Buffer {
  const parts = [bytes.subarray(0, 2)];
  for (const segment of jpeg.segments) if (!drop(segment)) parts.push(bytes.subarray(segment.start, segment.end));
  parts.push(bytes.subarray(jpeg.scanStart));
  return Buffer.concat(parts);
}

/**
 * Offset of the first end-of-image marker after `from` (the first scan). Inside entropy-coded
 * data a 0xff byte is always followed by 0x00 or a restart/segment marker, never by 0xd9.
 */
function endOfImage(bytes: Buffer, from: number): number {
  for (let at = bytes.indexOf(0xff, from); at !== -1 && at + 1 < bytes.length; at = bytes.indexOf(0xff, at + 1)) {
    if (bytes[at + 1] === EOI) return at;
  }
  return -1;
}

function identifierOf(body: Buffer): string {
  const end = body.indexOf(0, 0);
  return body.subarray(0, end === -1 ? Math.min(body.length, 32) : Math.min(end, 32)).toString("latin1");
}
