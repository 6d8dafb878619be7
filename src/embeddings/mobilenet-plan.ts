// nsfwjs's Keras MobileNetV2 topology, read up to the pooled 1280-d feature and reduced to a short
// list of fused steps, in plain JavaScript (no tensor library): every runtime (tfjs's wasm backend,
// ONNX Runtime) builds its forward pass from this one plan.
//
// Inference-mode BatchNormalization is folded into the preceding convolution's kernel and bias,
// and the following ReLU6 and the preceding ZeroPadding2D become attributes of that convolution.
// The final AveragePooling2D (7x7 in the file, i.e. the whole map at 224 px) becomes a global
// mean, which keeps its meaning at any input size that is a multiple of 32.
//
// The arithmetic is float32 throughout, rounded after every operation (Math.fround) in the order
// tfjs's kernels used when the folding ran on tensors: the folded weights are bit for bit the ones
// the stored vectors were computed with.
import { decodeWeights, foldBatchNorm, type KerasLayer, type KerasModelJson, type WeightTensor } from "./nsfwjs-models.js";

export type ExplicitPadding = [[number, number], [number, number], [number, number], [number, number]];
export type Activation = "linear" | "relu" | "relu6";

export type PlanTensor = WeightTensor;

export type PlanOp =
  | {
      kind: "conv";
      depthwise: boolean;
      input: string;
      output: string;
      /** [h, w, in, out] (Keras/TF layout); depthwise: [h, w, channels, multiplier]. */
      filter: PlanTensor;
      bias: PlanTensor | undefined;
      strides: [number, number];
      dilations: [number, number];
      pad: "same" | "valid" | ExplicitPadding;
      activation: Activation;
    }
  | { kind: "relu"; input: string; output: string; max: number | null }
  | { kind: "add"; inputs: string[]; output: string }
  | { kind: "globalMean"; input: string; output: string };

export interface MobileNetPlan {
  /** Name of the [n, h, w, 3] input. */
  input: string;
  /** Name of the [n, 1280] output. */
  output: string;
  ops: PlanOp[];
}

export function planMobileNet(json: KerasModelJson, weights: ArrayBuffer, outputLayer = "flatten_1"): MobileNetPlan {
  const layers = json.modelTopology.model_config.config.layers;
  const byName = new Map(layers.map((l) => [l.name, l]));
  const consumers = new Map<string, KerasLayer[]>();
  for (const l of layers) {
    for (const input of inboundNames(l)) consumers.set(input, [...(consumers.get(input) ?? []), l]);
  }
  const soleConsumer = (name: string, className: string): KerasLayer | undefined => {
    const c = consumers.get(name);
    return c?.length === 1 && c[0]?.class_name === className ? c[0] : undefined;
  };

  const raw = decodeWeights(json, weights);
  const weight = (name: string): PlanTensor => {
    const t = raw.get(name);
    if (!t) throw new Error(`nsfwjs weights lack ${name}`);
    return t;
  };
  const ops: PlanOp[] = [];
  const alias = new Map<string, string>(); // layer name -> the tensor key holding its output
  const source = (name: string) => alias.get(name) ?? name;
  const padFor = new Map<string, ExplicitPadding>();
  const absorbed = new Set<string>();
  let inputKey: string | undefined;

  for (const layer of layers) {
    if (absorbed.has(layer.name)) {
      if (layer.name === outputLayer) break;
      continue;
    }
    const inputs = inboundNames(layer).map(source);
    const cfg = layer.config;
    switch (layer.class_name) {
      case "InputLayer":
        inputKey = layer.name;
        break;
      case "ZeroPadding2D": {
        const next = soleConsumer(layer.name, "Conv2D") ?? soleConsumer(layer.name, "DepthwiseConv2D");
        if (!next || next.config.padding !== "valid") throw new Error(`cannot fold ${layer.name} into a convolution`);
        const [[top, bottom], [left, right]] = cfg.padding as [[number, number], [number, number]];
        padFor.set(next.name, [[0, 0], [top, bottom], [left, right], [0, 0]]);
        alias.set(layer.name, inputs[0]!);
        break;
      }
      case "Conv2D":
      case "DepthwiseConv2D": {
        const depthwise = layer.class_name === "DepthwiseConv2D";
        let filter = weight(`${layer.name}/${depthwise ? "depthwise_kernel" : "kernel"}`);
        let bias = cfg.use_bias ? weight(`${layer.name}/bias`) : undefined;
        let output = layer.name;
        const bn = soleConsumer(layer.name, "BatchNormalization");
        if (bn) {
          [filter, bias] = foldBatchNorm(filter, bias, bn, raw, depthwise);
          absorbed.add(bn.name);
          alias.set(bn.name, layer.name);
          output = bn.name;
        }
        let activation: Activation = cfg.activation === "relu" ? "relu" : "linear";
        const relu = activation === "linear" ? soleConsumer(output, "ReLU") : undefined;
        const fusedActivation = relu ? fusableRelu(relu) : undefined;
        if (relu && fusedActivation) {
          activation = fusedActivation;
          absorbed.add(relu.name);
          alias.set(relu.name, layer.name);
        }
        ops.push({
          kind: "conv",
          depthwise,
          input: inputs[0]!,
          output: layer.name,
          filter,
          bias,
          strides: cfg.strides as [number, number],
          dilations: cfg.dilation_rate as [number, number],
          pad: padFor.get(layer.name) ?? (cfg.padding as "same" | "valid"),
          activation,
        });
        break;
      }
      case "BatchNormalization":
        throw new Error(`${layer.name} does not follow a convolution; unsupported`);
      case "ReLU":
        if (cfg.threshold || cfg.negative_slope) throw new Error(`${layer.name}: leaky/thresholded ReLU unsupported`);
        ops.push({ kind: "relu", input: inputs[0]!, output: layer.name, max: (cfg.max_value as number | null) ?? null });
        break;
      case "Add":
        ops.push({ kind: "add", inputs, output: layer.name });
        break;
      case "AveragePooling2D": {
        const flatten = soleConsumer(layer.name, "Flatten");
        if (!flatten) throw new Error(`${layer.name} is not followed by Flatten; unsupported`);
        ops.push({ kind: "globalMean", input: inputs[0]!, output: flatten.name });
        absorbed.add(flatten.name);
        alias.set(layer.name, flatten.name);
        break;
      }
      default:
        throw new Error(`unsupported layer ${layer.class_name} (${layer.name}) before ${outputLayer}`);
    }
    if (layer.name === outputLayer || absorbed.has(outputLayer)) break;
  }
  if (!inputKey) throw new Error("the topology has no InputLayer");
  if (!byName.has(outputLayer)) throw new Error(`the topology has no layer ${outputLayer}`);
  return { input: inputKey, output: source(outputLayer), ops };
}

/**
 * TensorFlow's "same" padding for one spatial dimension, as [before, after]: the extra pixel an
 * even split cannot place goes after.
 */
export function samePadding(inSize: number, filterSize: number, stride: number, dilation: number): [number, number] {
  const effective = (filterSize - 1) * dilation + 1;
  const outSize = Math.ceil(inSize / stride);
  const total = Math.max((outSize - 1) * stride + effective - inSize, 0);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

/**
 * Whether an explicit padding is exactly "same" for this input size (MobileNetV2's ZeroPadding2D
 * before its stride-2 steps is, for even sizes): then a runtime can pad inside the convolution
 * instead of materialising a padded copy of the activations.
 */
export function isSamePadding(pad: ExplicitPadding, inHeight: number, inWidth: number, op: { filter: PlanTensor; strides: [number, number]; dilations: [number, number] }): boolean {
  if (pad[0][0] || pad[0][1] || pad[3][0] || pad[3][1]) return false;
  const [top, bottom] = samePadding(inHeight, op.filter.shape[0]!, op.strides[0], op.dilations[0]);
  const [left, right] = samePadding(inWidth, op.filter.shape[1]!, op.strides[1], op.dilations[1]);
  return pad[1][0] === top && pad[1][1] === bottom && pad[2][0] === left && pad[2][1] === right;
}

function inboundNames(layer: KerasLayer): string[] {
  return (layer.inbound_nodes[0] ?? []).map((node) => node[0]);
}

function fusableRelu(relu: KerasLayer): Activation | undefined {
  const c = relu.config;
  if (c.threshold || c.negative_slope) return undefined;
  if (c.max_value === 6) return "relu6";
  if (c.max_value === null || c.max_value === undefined) return "relu";
  return undefined;
}
