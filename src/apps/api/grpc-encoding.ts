import { ScalarType, toBinary } from "@bufbuild/protobuf";
import type { DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";

/**
 * Protobuf encoding of a method's answers, byte for byte what protobuf-es's toBinary writes, into
 * one buffer. toBinary was the largest share of a gRPC search's server CPU (46% of a service-grpc
 * call in bench/grpc-servers.ts): it walks each message through reflection, turns every
 * google.protobuf.Struct (a result's metadata) into Value messages first, and copies each nested
 * message out of its own chunk list. Messages with any field kind this does not know (maps,
 * oneofs, 64-bit numbers, wrappers, bytes...) and any value that is not what its field declares
 * go to toBinary, which then encodes or refuses them as before.
 */
export function answerEncoder(schema: DescMessage): (message: object) => Buffer {
  return ownEncoder(schema) ?? ((message) => viewOf(toBinary(schema, message as never)));
}

/** The encoder of this file for `schema`, undefined when a field of its messages is of a kind left to toBinary. */
export function ownEncoder(schema: DescMessage): ((message: object) => Buffer) | undefined {
  const fields = compile(schema, new Map());
  if (fields === undefined) return undefined;
  return (message) => {
    const writer = new Writer();
    try {
      fields(writer, message as Fields);
    } catch (error) {
      if (error !== UNEXPECTED) throw error;
      return viewOf(toBinary(schema, message as never));
    }
    return writer.finish();
  };
}

type Fields = Record<string, unknown> & { $unknown?: { no: number; wireType: number; data: Uint8Array }[] };
type WriteFields = (writer: Writer, message: Fields) => void;

// Thrown when a value is not what its field declares: the message then goes to toBinary.
const UNEXPECTED = Symbol("unexpected value");

const IMPLICIT = 2;
const EXPLICIT = 1;
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const STRUCT = "google.protobuf.Struct";

/** The writer of a message's fields, in toBinary's order (by field number), or undefined when a field is of a kind not handled here. */
function compile(schema: DescMessage, compiling: Map<DescMessage, WriteFields>): WriteFields | undefined {
  const known = compiling.get(schema);
  if (known) return known;
  const writers: ((writer: Writer, message: Fields) => void)[] = [];
  // Recursive messages refer to their own writer before it is complete.
  const all: WriteFields = (writer, message) => {
    for (const write of writers) write(writer, message);
    const unknown = message.$unknown;
    if (unknown !== undefined) for (const { no, wireType, data } of unknown) writer.tag(no, wireType).raw(data);
  };
  compiling.set(schema, all);
  for (const field of [...schema.fields].sort((a, b) => a.number - b.number)) {
    const write = fieldWriter(field, compiling);
    if (write === undefined) return undefined;
    writers.push(write);
  }
  return all;
}

function fieldWriter(field: DescField, compiling: Map<DescMessage, WriteFields>): WriteFields | undefined {
  if (field.oneof !== undefined) return undefined;
  const name = field.localName;
  const no = field.number;
  switch (field.fieldKind) {
    case "scalar": {
      const write = scalarWriter(field.scalar);
      if (write === undefined || (field.presence !== IMPLICIT && field.presence !== EXPLICIT)) return undefined;
      const implicit = field.presence === IMPLICIT;
      const zero = zeroTest(field.scalar);
      return (writer, message) => {
        const value = message[name];
        if (implicit ? zero(value) : value === undefined) return;
        write(writer, no, value);
      };
    }
    case "enum": {
      if (field.presence !== IMPLICIT && field.presence !== EXPLICIT) return undefined;
      const implicit = field.presence === IMPLICIT;
      const unset = field.enum.values[0]?.number;
      return (writer, message) => {
        const value = message[name];
        if (implicit ? value === unset : value === undefined) return;
        writeInt32(writer, no, value);
      };
    }
    case "message": {
      if (field.delimitedEncoding) return undefined;
      if (field.message.typeName === STRUCT) {
        return (writer, message) => {
          const value = message[name];
          if (value === undefined) return;
          if (value === null || typeof value !== "object" || Array.isArray(value)) throw UNEXPECTED;
          const at = writer.tag(no, LENGTH_DELIMITED).fork();
          writeStruct(writer, value as JsonObject);
          writer.join(at);
        };
      }
      if (field.message.typeName.startsWith("google.protobuf.") && field.message.typeName.endsWith("Value")) return undefined;
      const fields = compile(field.message, compiling);
      if (fields === undefined) return undefined;
      return (writer, message) => {
        const value = message[name];
        if (value === undefined) return;
        writeMessage(writer, no, fields, value);
      };
    }
    case "list": {
      if (field.listKind === "message") {
        if (field.delimitedEncoding || field.message.typeName.startsWith("google.protobuf.")) return undefined;
        const fields = compile(field.message, compiling);
        if (fields === undefined) return undefined;
        return (writer, message) => {
          for (const item of listOf(message[name])) writeMessage(writer, no, fields, item);
        };
      }
      if (field.listKind === "scalar" && field.scalar === ScalarType.STRING) {
        return (writer, message) => {
          for (const item of listOf(message[name])) writeString(writer, no, item);
        };
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

function scalarWriter(type: ScalarType): ((writer: Writer, no: number, value: unknown) => void) | undefined {
  switch (type) {
    case ScalarType.STRING:
      return writeString;
    case ScalarType.DOUBLE:
      return writeDouble;
    case ScalarType.BOOL:
      return (writer, no, value) => {
        if (typeof value !== "boolean") throw UNEXPECTED;
        writer.tag(no, VARINT).varint(value ? 1 : 0);
      };
    case ScalarType.INT32:
      return writeInt32;
    case ScalarType.UINT32:
      return (writer, no, value) => {
        if (typeof value !== "number" || value >>> 0 !== value) throw UNEXPECTED;
        writer.tag(no, VARINT).varint(value);
      };
    default:
      return undefined;
  }
}

/** Whether a field without presence holds its zero value, and so is not written (protobuf-es's isScalarZeroValue). */
function zeroTest(type: ScalarType): (value: unknown) => boolean {
  switch (type) {
    case ScalarType.BOOL:
      return (value) => value === false;
    case ScalarType.STRING:
      return (value) => value === "";
    case ScalarType.DOUBLE:
      // -0 is written.
      return (value) => Object.is(value, 0);
    default:
      // Loosely, as protobuf-es compares: 0n and "0" count as zero too.
      return (value) => value == 0;
  }
}

function listOf(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw UNEXPECTED;
  return value;
}

function writeMessage(writer: Writer, no: number, fields: WriteFields, value: unknown): void {
  if (value === null || typeof value !== "object") throw UNEXPECTED;
  const at = writer.tag(no, LENGTH_DELIMITED).fork();
  fields(writer, value as Fields);
  writer.join(at);
}

function writeString(writer: Writer, no: number, value: unknown): void {
  if (typeof value !== "string") throw UNEXPECTED;
  writer.tag(no, LENGTH_DELIMITED).string(value);
}

function writeDouble(writer: Writer, no: number, value: unknown): void {
  if (typeof value !== "number") throw UNEXPECTED;
  writer.tag(no, FIXED64).double(value);
}

function writeInt32(writer: Writer, no: number, value: unknown): void {
  if (typeof value !== "number" || (value | 0) !== value) throw UNEXPECTED;
  writer.tag(no, VARINT);
  // Negative int32s are sign-extended to ten bytes, as protobuf requires.
  if (value >= 0) writer.varint(value);
  else writer.negativeVarint(value);
}

/** A Struct from its JSON form, as protobuf-es encodes one: each field a map entry (key 1, Value 2). */
function writeStruct(writer: Writer, json: JsonObject): void {
  for (const key of Object.keys(json)) {
    const entry = writer.tag(1, LENGTH_DELIMITED).fork();
    writer.tag(1, LENGTH_DELIMITED).string(key);
    const value = writer.tag(2, LENGTH_DELIMITED).fork();
    writeValue(writer, json[key]);
    writer.join(value);
    writer.join(entry);
  }
}

/** A google.protobuf.Value's fields: null 1, number 2, string 3, bool 4, struct 5, list 6 (a value of no JSON type: none). */
function writeValue(writer: Writer, json: JsonValue | undefined): void {
  switch (typeof json) {
    case "number":
      writer.tag(2, FIXED64).double(json);
      return;
    case "string":
      writer.tag(3, LENGTH_DELIMITED).string(json);
      return;
    case "boolean":
      writer.tag(4, VARINT).varint(json ? 1 : 0);
      return;
    case "object": {
      if (json === null) {
        writer.tag(1, VARINT).varint(0);
        return;
      }
      const at = writer.tag(Array.isArray(json) ? 6 : 5, LENGTH_DELIMITED).fork();
      if (Array.isArray(json)) {
        for (const item of json) {
          const element = writer.tag(1, LENGTH_DELIMITED).fork();
          writeValue(writer, item);
          writer.join(element);
        }
      } else {
        writeStruct(writer, json);
      }
      writer.join(at);
      return;
    }
    default:
      return;
  }
}

function viewOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// One scratch buffer for every answer (encoding is synchronous); each answer leaves as a copy.
let scratch = Buffer.allocUnsafe(64 * 1024);
const SCRATCH_KEPT = 1024 * 1024;
const SHORT_STRING = 64;

/**
 * Writes into the scratch buffer. A nested message's length is not known before its content, so
 * fork() leaves one byte for it and join() writes it there, moving the content up in the rare case
 * the length needs more than one byte (128 bytes or more).
 */
class Writer {
  private buf = scratch;
  private pos = 0;

  tag(no: number, wireType: number): this {
    return this.varint(no * 8 + wireType);
  }

  varint(value: number): this {
    this.ensure(5);
    while (value > 0x7f) {
      this.buf[this.pos++] = (value & 0x7f) | 0x80;
      value = value >>> 7;
    }
    this.buf[this.pos++] = value;
    return this;
  }

  negativeVarint(value: number): this {
    this.ensure(10);
    let low = value >>> 0;
    for (let i = 0; i < 4; i++) {
      this.buf[this.pos++] = (low & 0x7f) | 0x80;
      low = low >>> 7;
    }
    // Bits 28-31 of the low word, then all-ones high bits.
    this.buf[this.pos++] = (low & 0x0f) | 0x70 | 0x80;
    for (let i = 0; i < 4; i++) this.buf[this.pos++] = 0xff;
    this.buf[this.pos++] = 0x01;
    return this;
  }

  double(value: number): this {
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
    return this;
  }

  string(value: string): this {
    // At most three bytes per UTF-16 unit; the length goes in front like a nested message's.
    this.ensure(value.length * 3 + 1);
    const at = this.fork();
    this.pos = value.length <= SHORT_STRING ? this.shortString(value) : this.pos + this.buf.write(value, this.pos, "utf8");
    this.join(at);
    return this;
  }

  /** Where a short string ends once written: its ASCII characters copied here, the rest by Buffer's UTF-8 writer (whose call costs more than such a string's copy). */
  private shortString(value: string): number {
    const { buf } = this;
    let pos = this.pos;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) return pos + buf.write(value.slice(i), pos, "utf8");
      buf[pos++] = code;
    }
    return pos;
  }

  raw(bytes: Uint8Array): this {
    this.ensure(bytes.byteLength);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.byteLength;
    return this;
  }

  fork(): number {
    this.ensure(1);
    return this.pos++;
  }

  join(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    const size = length < 1 << 14 ? 2 : length < 1 << 21 ? 3 : length < 1 << 28 ? 4 : 5;
    this.ensure(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    let value = length;
    for (let i = at; i < at + size - 1; i++) {
      this.buf[i] = (value & 0x7f) | 0x80;
      value = value >>> 7;
    }
    this.buf[at + size - 1] = value;
  }

  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    if (this.buf.length <= SCRATCH_KEPT) scratch = this.buf;
    return out;
  }

  private ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}
