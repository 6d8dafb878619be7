// nsfwjs's Keras InceptionV3, up to a block's output averaged over its positions, written out as an
// ONNX model (opset 13) from the bundle's weights, for ONNX Runtime's CPU kernels: the second
// network of the quality image model (image-encoder.ts). Nothing is downloaded; feature-engines.ts
// keeps the bytes in the cache directory.
//
// The network holds few layer kinds: Conv2D without bias, each followed by an inference-mode
// BatchNormalization (scale=False) and a ReLU; max and average pooling; concatenation of branches.
// The normalisation is folded into the convolution (nsfwjs-models.ts foldBatchNorm, as for
// MobileNet: kernel scaled per output channel, a bias added), so the graph is Conv + Relu pairs
// ONNX Runtime fuses. Layout NCHW, as ONNX's Conv needs; the head (pooling fixed at 8x8 and the
// NSFW classifier) is never read, so any input size that leaves the last block at least 1x1 works.
import { decodeWeights, foldBatchNorm, type KerasLayer, type KerasModelJson, type WeightTensor } from "./nsfwjs-models.js";
import { convKernel } from "./onnx-mobilenet.js";
import { intAttribute, intsAttribute, modelBytes, nodeProto, Proto, stringAttribute, tensorProto, valueInfoProto } from "./onnx-proto.js";

export const INCEPTION_INPUT = "input";
export const INCEPTION_OUTPUT = "features";

/**
 * [n, 3, size, size] pixels in [0, 1] -> [n, channels of `cut`] (2048 for mixed10), the mean of
 * that block's (non-negative) outputs.
 */
export function inceptionToOnnx(json: KerasModelJson, weights: ArrayBuffer, size: number, cut = "mixed10"): Uint8Array {
  const layers = json.modelTopology.model_config.config.layers;
  const byName = new Map(layers.map((l) => [l.name, l]));
  if (!byName.has(cut)) throw new Error(`InceptionV3 has no layer ${cut}`);
  const raw = decodeWeights(json, weights);
  const weight = (name: string): WeightTensor => {
    const t = raw.get(name);
    if (!t) throw new Error(`nsfwjs weights lack ${name}`);
    return t;
  };
  const inputsOf = (layer: KerasLayer) =>
    (layer.inbound_nodes[0] ?? []).map(([name]) => (byName.get(name)?.class_name === "InputLayer" ? INCEPTION_INPUT : name));
  const pad = (padding: unknown) => stringAttribute("auto_pad", padding === "same" ? "SAME_UPPER" : "VALID"); // TF's "same": the odd pixel after
  const nodes: Proto[] = [];
  const initialisers: Proto[] = [];
  const folded = new Map<string, string>(); // BatchNormalization layer -> the convolution it was folded into

  for (const layer of layers) {
    const c = layer.config;
    const inputs = inputsOf(layer).map((name) => folded.get(name) ?? name);
    switch (layer.class_name) {
      case "InputLayer":
        break;
      case "Conv2D": {
        if (c["use_bias"] || c["activation"] !== "linear") throw new Error(`${layer.name}: a bias or an activation is not expected`);
        const kernel = weight(`${layer.name}/kernel`);
        const bn = layers.find((l) => l.class_name === "BatchNormalization" && inputsOf(l)[0] === layer.name);
        if (!bn) throw new Error(`${layer.name}: no BatchNormalization follows`);
        const [scaled, bias] = foldBatchNorm(kernel, undefined, bn, raw, false);
        initialisers.push(tensorProto(`${layer.name}/kernel`, ...convKernel(scaled)), tensorProto(`${layer.name}/bias`, bias.shape, bias.values));
        nodes.push(
          nodeProto("Conv", [inputs[0]!, `${layer.name}/kernel`, `${layer.name}/bias`], [layer.name], [
            intsAttribute("kernel_shape", c["kernel_size"] as number[]),
            intsAttribute("strides", c["strides"] as number[]),
            pad(c["padding"]),
          ]),
        );
        folded.set(bn.name, layer.name);
        break;
      }
      case "BatchNormalization":
        if (!folded.has(layer.name)) throw new Error(`${layer.name}: not after a convolution`);
        break;
      case "Activation":
        if (c["activation"] !== "relu") throw new Error(`${layer.name}: activation ${String(c["activation"])}`);
        nodes.push(nodeProto("Relu", inputs, [layer.name]));
        break;
      case "MaxPooling2D":
      case "AveragePooling2D":
        nodes.push(
          nodeProto(layer.class_name === "MaxPooling2D" ? "MaxPool" : "AveragePool", inputs, [layer.name], [
            intsAttribute("kernel_shape", c["pool_size"] as number[]),
            intsAttribute("strides", c["strides"] as number[]),
            pad(c["padding"]),
          ]),
        );
        break;
      case "Concatenate":
        if (c["axis"] !== 3 && c["axis"] !== -1) throw new Error(`${layer.name}: concatenation on axis ${String(c["axis"])}`);
        nodes.push(nodeProto("Concat", inputs, [layer.name], [intAttribute("axis", 1)]));
        break;
      default:
        throw new Error(`${layer.name}: ${layer.class_name} is not converted`);
    }
    if (layer.name === cut) break;
  }
  nodes.push(nodeProto("GlobalAveragePool", [cut], [`${cut}/pooled`]));
  nodes.push(nodeProto("Flatten", [`${cut}/pooled`], [INCEPTION_OUTPUT], [intAttribute("axis", 1)]));
  const graph = new Proto().str(2, "inception_v3_features");
  for (const n of nodes) graph.msg(1, n);
  for (const t of initialisers) graph.msg(5, t);
  graph.msg(11, valueInfoProto(INCEPTION_INPUT, ["n", 3, size, size]));
  graph.msg(12, valueInfoProto(INCEPTION_OUTPUT, ["n", "features"]));
  return modelBytes(graph);
}
