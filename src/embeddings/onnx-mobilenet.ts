// The fused MobileNetV2 plan written out as an ONNX model (opset 13), built in memory at load from
// nsfwjs's weights, for ONNX Runtime's native CPU kernels. Nothing is downloaded or cached on
// disk: the bytes go straight to InferenceSession.create.
//
// Layout: NCHW, as ONNX's Conv requires; the caller hands in [n, 3, size, size] pixels. Kernels
// go from Keras's [h, w, in, out] to ONNX's [out, in / group, h, w]; a depthwise [h, w, c, m]
// kernel becomes [c * m, 1, h, w] with group = c. ReLU6 is Clip(0, 6), which ONNX Runtime fuses
// into the convolution.
import type { MobileNetPlan, PlanTensor } from "./mobilenet-plan.js";
import { intAttribute, intsAttribute, modelBytes, nodeProto, Proto, stringAttribute, tensorProto, valueInfoProto } from "./onnx-proto.js";

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
  return modelBytes(graph);
}

function lastConvChannels(plan: MobileNetPlan): number | undefined {
  for (let i = plan.ops.length - 1; i >= 0; i--) {
    const op = plan.ops[i]!;
    if (op.kind === "conv") return op.filter.shape[3]! * (op.depthwise ? op.filter.shape[2]! : 1);
  }
  return undefined;
}

/** [h, w, in, out] -> [out, in, h, w] */
export function convKernel({ shape, values }: PlanTensor): [number[], Float32Array] {
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
