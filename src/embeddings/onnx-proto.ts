// Just enough protobuf to write onnx.proto's ModelProto (field numbers from onnx.proto), for the
// models built in memory from nsfwjs's weights (onnx-mobilenet.ts).

const FLOAT = 1; // TensorProto.DataType
const ATTRIBUTE_INT = 2, ATTRIBUTE_STRING = 3, ATTRIBUTE_INTS = 7; // AttributeProto.AttributeType

export class Proto {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(chunk: Uint8Array): this {
    this.chunks.push(chunk);
    this.length += chunk.length;
    return this;
  }
  private varint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`cannot encode ${value} as a varint`);
    const out: number[] = [];
    let v = value;
    while (v >= 0x80) {
      out.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    out.push(v);
    return this.push(Uint8Array.from(out));
  }
  private tag(field: number, wireType: 0 | 2): this {
    return this.varint(field * 8 + wireType);
  }
  int(field: number, value: number): this {
    return this.tag(field, 0).varint(value);
  }
  raw(field: number, bytes: Uint8Array): this {
    return this.tag(field, 2).varint(bytes.length).push(bytes);
  }
  str(field: number, value: string): this {
    return this.raw(field, new TextEncoder().encode(value));
  }
  msg(field: number, message: Proto): this {
    return this.raw(field, message.bytes());
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  }
}

export function tensorProto(name: string, dims: number[], values: Float32Array): Proto {
  const t = new Proto();
  for (const d of dims) t.int(1, d);
  // raw_data is little-endian float32, which is how a Float32Array sits in memory on every
  // platform Node runs on.
  return t.int(2, FLOAT).str(8, name).raw(9, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

export function nodeProto(opType: string, inputs: string[], outputs: string[], attributes: Proto[] = []): Proto {
  const n = new Proto();
  for (const i of inputs) n.str(1, i);
  for (const o of outputs) n.str(2, o);
  n.str(3, outputs[0]!).str(4, opType);
  for (const a of attributes) n.msg(5, a);
  return n;
}

export function intAttribute(name: string, value: number): Proto {
  return new Proto().str(1, name).int(20, ATTRIBUTE_INT).int(3, value);
}

export function intsAttribute(name: string, values: readonly number[]): Proto {
  const a = new Proto().str(1, name).int(20, ATTRIBUTE_INTS);
  for (const v of values) a.int(8, v);
  return a;
}

export function stringAttribute(name: string, value: string): Proto {
  return new Proto().str(1, name).int(20, ATTRIBUTE_STRING).str(4, value);
}

export function valueInfoProto(name: string, dims: (number | string)[]): Proto {
  const shape = new Proto();
  for (const d of dims) shape.msg(1, typeof d === "number" ? new Proto().int(1, d) : new Proto().str(2, d));
  const tensorType = new Proto().int(1, FLOAT).msg(2, shape);
  return new Proto().str(1, name).msg(2, new Proto().msg(1, tensorType));
}

/** A ModelProto around `graph`, in opset 13 of the default domain. */
export function modelBytes(graph: Proto): Uint8Array {
  return new Proto()
    .int(1, 8) // ir_version
    .str(2, "vitrine")
    .msg(8, new Proto().str(1, "").int(2, 13)) // opset_import: the default domain, opset 13
    .msg(7, graph)
    .bytes();
}
