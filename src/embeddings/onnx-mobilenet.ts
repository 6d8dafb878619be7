// The fused MobileNetV2 plan written out as an ONNX model (opset 13), built in memory at load from
// nsfwjs's weights, for ONNX Runtime's native CPU kernels. Nothing is downloaded or cached on
// disk: the bytes go straight to InferenceSession.create.
//
// Layout: NCHW, as ONNX's Conv requires; the caller hands in [n, 3, size, size] pixels. Kernels
// go from Keras's [h, w, in, out] to ONNX's [out, in / group, h, w]; a depthwise [h, w, c, m]
// kernel becomes [c * m, 1, h, w] with group = c. ReLU6 is Clip(0, 6), which ONNX Runtime fuses
// into the convolution.
import type { MobileNetPlan, PlanTensor } from "./mobilenet-plan.js";

/** A tensor of the plan pooled over its positions into an extra output named "<tensor>/<pool>" (bench/eval-features.ts). */
export interface PooledOutput {
  tensor: string;
  pool: "mean" | "max";
}

export function mobileNetToOnnx(plan: MobileNetPlan, size: number, extra: readonly PooledOutput[] = []): Uint8Array {
  const nodes: Proto[] = [];
  const initialisers: Proto[] = [tensorProto("relu6/min", [], new Float32Array([0])), tensorProto("relu6/max", [], new Float32Array([6]))];
  const clip = (input: string, output: string) => nodeProto("Clip", [input, "relu6/min", "relu6/max"], [output]);
  for (const op of plan.ops) {
    switch (op.kind) {
      case "conv": {
        const [kh, kw, inChannels] = op.filter.shape as [number, number, number, number];
        const weightName = `${op.output}/kernel`;
        initialisers.push(tensorProto(weightName, ...(op.depthwise ? depthwiseKernel(op.filter) : convKernel(op.filter))));
        const inputs = [op.input, weightName];
        if (op.bias) {
          initialisers.push(tensorProto(`${op.output}/bias`, op.bias.shape, op.bias.values));
          inputs.push(`${op.output}/bias`);
        }
        const attributes = [
          intsAttribute("kernel_shape", [kh, kw]),
          intsAttribute("strides", op.strides),
          intsAttribute("dilations", op.dilations),
          intAttribute("group", op.depthwise ? inChannels : 1),
        ];
        if (op.pad === "same") attributes.push(stringAttribute("auto_pad", "SAME_UPPER")); // TF's "same": the odd pixel after
        else if (op.pad === "valid") attributes.push(stringAttribute("auto_pad", "VALID"));
        else {
          if (op.pad[0].some(Boolean) || op.pad[3].some(Boolean)) throw new Error(`${op.output}: padding across batch or channels`);
          attributes.push(intsAttribute("pads", [op.pad[1][0], op.pad[2][0], op.pad[1][1], op.pad[2][1]]));
        }
        const convOutput = op.activation === "linear" ? op.output : `${op.output}/linear`;
        nodes.push(nodeProto("Conv", inputs, [convOutput], attributes));
        if (op.activation === "relu6") nodes.push(clip(convOutput, op.output));
        else if (op.activation === "relu") nodes.push(nodeProto("Relu", [convOutput], [op.output]));
        break;
      }
      case "relu":
        if (op.max === 6) nodes.push(clip(op.input, op.output));
        else if (op.max === null) nodes.push(nodeProto("Relu", [op.input], [op.output]));
        else {
          initialisers.push(tensorProto(`${op.output}/max`, [], new Float32Array([op.max])));
          nodes.push(nodeProto("Clip", [op.input, "relu6/min", `${op.output}/max`], [op.output]));
        }
        break;
      case "add":
        nodes.push(op.inputs.length === 2 ? nodeProto("Add", op.inputs, [op.output]) : nodeProto("Sum", op.inputs, [op.output]));
        break;
      case "globalMean":
        nodes.push(nodeProto("GlobalAveragePool", [op.input], [`${op.output}/pooled`]));
        nodes.push(nodeProto("Flatten", [`${op.output}/pooled`], [op.output], [intAttribute("axis", 1)]));
        break;
    }
  }
  for (const { tensor, pool } of extra) {
    const name = `${tensor}/${pool}`;
    nodes.push(nodeProto(pool === "mean" ? "GlobalAveragePool" : "GlobalMaxPool", [tensor], [`${name}/pooled`]));
    nodes.push(nodeProto("Flatten", [`${name}/pooled`], [name], [intAttribute("axis", 1)]));
  }
  const graph = new Proto().str(2, "mobilenet_v2_features");
  for (const n of nodes) graph.msg(1, n);
  for (const t of initialisers) graph.msg(5, t);
  graph.msg(11, valueInfoProto(plan.input, ["n", 3, size, size]));
  graph.msg(12, valueInfoProto(plan.output, ["n", lastConvChannels(plan) ?? "features"]));
  for (const { tensor, pool } of extra) graph.msg(12, valueInfoProto(`${tensor}/${pool}`, ["n", "features"]));
  return new Proto()
    .int(1, 8) // ir_version
    .str(2, "vitrine")
    .msg(8, new Proto().str(1, "").int(2, 13)) // opset_import: the default domain, opset 13
    .msg(7, graph)
    .bytes();
}

function lastConvChannels(plan: MobileNetPlan): number | undefined {
  for (let i = plan.ops.length - 1; i >= 0; i--) {
    const op = plan.ops[i]!;
    if (op.kind === "conv") return op.filter.shape[3]! * (op.depthwise ? op.filter.shape[2]! : 1);
  }
  return undefined;
}

/** [h, w, in, out] -> [out, in, h, w] */
function convKernel({ shape, values }: PlanTensor): [number[], Float32Array] {
  const [h, w, i, o] = shape as [number, number, number, number];
  const out = new Float32Array(values.length);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let c = 0; c < i; c++)
        for (let k = 0; k < o; k++) out[((k * i + c) * h + y) * w + x] = values[((y * w + x) * i + c) * o + k]!;
  return [[o, i, h, w], out];
}

/** [h, w, c, m] -> [c * m, 1, h, w] */
function depthwiseKernel({ shape, values }: PlanTensor): [number[], Float32Array] {
  const [h, w, c, m] = shape as [number, number, number, number];
  const out = new Float32Array(values.length);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let k = 0; k < c * m; k++) out[(k * h + y) * w + x] = values[(y * w + x) * c * m + k]!;
  return [[c * m, 1, h, w], out];
}

// ---------------------------------------------------------------------------------------------
// Just enough protobuf to write onnx.proto's ModelProto (field numbers from onnx.proto).

const FLOAT = 1; // TensorProto.DataType
const ATTRIBUTE_INT = 2, ATTRIBUTE_STRING = 3, ATTRIBUTE_INTS = 7; // AttributeProto.AttributeType

class Proto {
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

function tensorProto(name: string, dims: number[], values: Float32Array): Proto {
  const t = new Proto();
  for (const d of dims) t.int(1, d);
  // raw_data is little-endian float32, which is how a Float32Array sits in memory on every
  // platform Node runs on.
  return t.int(2, FLOAT).str(8, name).raw(9, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

function nodeProto(opType: string, inputs: string[], outputs: string[], attributes: Proto[] = []): Proto {
  const n = new Proto();
  for (const i of inputs) n.str(1, i);
  for (const o of outputs) n.str(2, o);
  n.str(3, outputs[0]!).str(4, opType);
  for (const a of attributes) n.msg(5, a);
  return n;
}

function intAttribute(name: string, value: number): Proto {
  return new Proto().str(1, name).int(20, ATTRIBUTE_INT).int(3, value);
}

function intsAttribute(name: string, values: readonly number[]): Proto {
  const a = new Proto().str(1, name).int(20, ATTRIBUTE_INTS);
  for (const v of values) a.int(8, v);
  return a;
}

function stringAttribute(name: string, value: string): Proto {
  return new Proto().str(1, name).int(20, ATTRIBUTE_STRING).str(4, value);
}

function valueInfoProto(name: string, dims: (number | string)[]): Proto {
  const shape = new Proto();
  for (const d of dims) shape.msg(1, typeof d === "number" ? new Proto().int(1, d) : new Proto().str(2, d));
  const tensorType = new Proto().int(1, FLOAT).msg(2, shape);
  return new Proto().str(1, name).msg(2, new Proto().msg(1, tensorType));
}
