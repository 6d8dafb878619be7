import { create, ScalarType, toBinary } from "@bufbuild/protobuf";
import type { DescField, DescFile, DescMessage } from "@bufbuild/protobuf";
import { isScalarZeroValue } from "@bufbuild/protobuf/reflect";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import protobuf from "protobufjs";
// Adds Root.fromDescriptor: the types come from the generated descriptors, no .proto file is read.
import "protobufjs/ext/descriptor/index.js";

/**
 * Protobuf encoding of a method's answers by protobufjs, whose encoder is generated per message
 * type, rather than protobuf-es's toBinary, which walks each message by reflection and first turns
 * every google.protobuf.Struct (a result's metadata) into Value messages: toBinary was the largest
 * share of a gRPC search's server CPU (46% of a service-grpc call in bench/grpc-servers.ts). A
 * 10-result search answer: toBinary about 160 us of CPU, this about 15 us, the same bytes.
 *
 * The protobuf-es message is copied into protobufjs's plain form (proto field names, Structs as
 * their entries, values that are zero for a field without presence left out, as toBinary leaves
 * them). Messages with a field of a kind not copied here (maps, oneofs, 64-bit numbers, bytes,
 * wrappers: the catalog and key answers, with their Timestamps) and any value that is not what its
 * field declares go to toBinary, which then encodes or refuses them as before.
 */
export function answerEncoder(schema: DescMessage): (message: object) => Buffer {
  return ownEncoder(schema) ?? ((message) => viewOf(toBinary(schema, message as never)));
}

/** The protobufjs encoder for `schema`, undefined when a field of its messages is of a kind left to toBinary. */
export function ownEncoder(schema: DescMessage): ((message: object) => Buffer) | undefined {
  const copy = copier(schema, new Map());
  if (copy === undefined) return undefined;
  const type = protobufjsRoot(schema.file).lookupType(schema.typeName);
  return (message) => {
    let plain: Plain;
    try {
      plain = copy(message as Plain);
    } catch (error) {
      if (error !== UNEXPECTED) throw error;
      return viewOf(toBinary(schema, message as never));
    }
    return viewOf(type.encode(plain).finish());
  };
}

type Plain = Record<string, unknown>;
type Copy = (message: Plain) => Plain;

// Thrown when a value is not what its field declares: the message then goes to toBinary.
const UNEXPECTED = Symbol("unexpected value");
const IMPLICIT = 2;
const EXPLICIT = 1;
const STRUCT = "google.protobuf.Struct";

/** A view on the encoder's bytes, not a copy: grpc-js copies it into the frame itself. */
function viewOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

const roots = new Map<DescFile, protobuf.Root>();

/** protobufjs's types of a generated file and everything it imports. */
function protobufjsRoot(file: DescFile): protobuf.Root {
  let root = roots.get(file);
  if (root) return root;
  const files: DescFile[] = [];
  const add = (f: DescFile) => {
    if (files.includes(f)) return;
    for (const dependency of f.dependencies) add(dependency);
    files.push(f);
  };
  add(file);
  const set = toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: files.map((f) => f.proto) }));
  root = (protobuf.Root as unknown as { fromDescriptor(bytes: Uint8Array): protobuf.Root }).fromDescriptor(set);
  roots.set(file, root);
  return root;
}

/** The copier of a message into protobufjs's form, or undefined when a field is of a kind not copied here. */
function copier(schema: DescMessage, compiling: Map<DescMessage, Copy>): Copy | undefined {
  const known = compiling.get(schema);
  if (known) return known;
  const fields: ((from: Plain, to: Plain) => void)[] = [];
  // Recursive messages refer to their own copier before it is complete.
  const copy: Copy = (from) => {
    if (typeof from !== "object" || from === null) throw UNEXPECTED;
    // Unknown fields would be lost: toBinary writes them.
    if ((from as { $unknown?: unknown[] }).$unknown?.length) throw UNEXPECTED;
    const to: Plain = {};
    for (const field of fields) field(from, to);
    return to;
  };
  compiling.set(schema, copy);
  for (const field of schema.fields) {
    const one = fieldCopier(field, compiling);
    if (one === undefined) return undefined;
    fields.push(one);
  }
  return copy;
}

function fieldCopier(field: DescField, compiling: Map<DescMessage, Copy>): ((from: Plain, to: Plain) => void) | undefined {
  if (field.oneof !== undefined) return undefined;
  const [from, to] = [field.localName, field.name];
  switch (field.fieldKind) {
    case "scalar":
    case "enum": {
      const check = field.fieldKind === "enum" ? checkInt32 : scalarCheck(field.scalar);
      if (check === undefined || (field.presence !== IMPLICIT && field.presence !== EXPLICIT)) return undefined;
      const implicit = field.presence === IMPLICIT;
      // toBinary's own test for a value it leaves out of a field without presence (enums as int32).
      const type = field.fieldKind === "enum" ? ScalarType.INT32 : field.scalar;
      return (message, out) => {
        const value = message[from];
        if (implicit ? isScalarZeroValue(type, value) : value === undefined) return;
        check(value);
        out[to] = value;
      };
    }
    case "message": {
      const copy = valueCopier(field.message, compiling);
      if (copy === undefined) return undefined;
      return (message, out) => {
        const value = message[from];
        if (value !== undefined) out[to] = copy(value);
      };
    }
    case "list": {
      const item =
        field.listKind === "message" ? valueCopier(field.message, compiling) : field.listKind === "enum" ? checked(checkInt32) : checked(scalarCheck(field.scalar));
      if (item === undefined) return undefined;
      return (message, out) => {
        const value = message[from];
        if (!Array.isArray(value)) throw UNEXPECTED;
        if (value.length > 0) out[to] = value.map(item);
      };
    }
    default:
      return undefined;
  }
}

/** How a message field's value (a Struct as protobuf-es gives it: plain JSON) is copied. */
function valueCopier(schema: DescMessage, compiling: Map<DescMessage, Copy>): ((value: unknown) => unknown) | undefined {
  if (schema.typeName === STRUCT) return (value) => struct(value);
  // Other well-known types protobuf-es unboxes (wrappers) are not copied here.
  if (schema.typeName.startsWith("google.protobuf.")) return undefined;
  return copier(schema, compiling) as ((value: unknown) => unknown) | undefined;
}

function checked(check: ((value: unknown) => void) | undefined): ((value: unknown) => unknown) | undefined {
  return check && ((value) => (check(value), value));
}

/** A JSON object as google.protobuf.Struct: its map entries in the object's key order, as toBinary writes them. */
function struct(value: unknown): { fields: { key: string; value: unknown }[] } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw UNEXPECTED;
  const fields = [];
  for (const key in value) {
    if (!wellFormed(key)) throw UNEXPECTED;
    fields.push({ key, value: jsonValue((value as Plain)[key]) });
  }
  return { fields };
}

function jsonValue(value: unknown): unknown {
  switch (typeof value) {
    case "number":
      return { number_value: value };
    case "string":
      if (!wellFormed(value)) throw UNEXPECTED;
      return { string_value: value };
    case "boolean":
      return { bool_value: value };
    case "object":
      if (value === null) return { null_value: 0 };
      return Array.isArray(value) ? { list_value: { values: value.map(jsonValue) } } : { struct_value: struct(value) };
    default:
      throw UNEXPECTED;
  }
}

function scalarCheck(type: ScalarType): ((value: unknown) => void) | undefined {
  switch (type) {
    case ScalarType.STRING:
      return (value) => {
        if (typeof value !== "string" || !wellFormed(value)) throw UNEXPECTED;
      };
    case ScalarType.BOOL:
      return (value) => {
        if (typeof value !== "boolean") throw UNEXPECTED;
      };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (value) => {
        if (typeof value !== "number") throw UNEXPECTED;
      };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return checkInt32;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (value) => {
        if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 0xffffffff) throw UNEXPECTED;
      };
    default:
      // 64-bit numbers and bytes are left to toBinary.
      return undefined;
  }
}

/**
 * Whether a string has no lone surrogate (JSON input can carry one): toBinary writes one as
 * U+FFFD, protobufjs as bytes that are not UTF-8, which a gRPC client would refuse.
 */
function wellFormed(value: string): boolean {
  return (value as string & { isWellFormed(): boolean }).isWellFormed();
}

function checkInt32(value: unknown): void {
  if (!Number.isInteger(value) || (value as number) < -0x80000000 || (value as number) > 0x7fffffff) throw UNEXPECTED;
}
