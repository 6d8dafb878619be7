// nsfwjs's Keras InceptionV3, as loaded by tfjs-layers (backbones.ts), written out as an ONNX model for
// ONNX Runtime's CPU kernels, so its cost can be measured on the runtime the service's default
// encoder uses. A research converter for the layer kinds this one network holds (Conv2D without
// bias, BatchNormalization as a per-channel multiply and add that ONNX Runtime folds into the
// convolution, ReLU, max and average pooling, concatenation), ending at `cut` averaged over its
// positions. NCHW, as ONNX's Conv requires.
import type * as tfl from "@tensorflow/tfjs-layers";
import type { KerasLayer } from "../../src/embeddings/nsfwjs-mobilenet.js";
import { convKernel } from "../../src/embeddings/onnx-mobilenet.js";
import { intAttribute, intsAttribute, modelBytes, nodeProto, Proto, stringAttribute, tensorProto, valueInfoProto } from "../../src/embeddings/onnx-proto.js";

export const ONNX_INPUT = "input";
export const ONNX_OUTPUT = "features";

export function inceptionToOnnx(model: tfl.LayersModel, layers: readonly KerasLayer[], size: number, cut: string): Uint8Array {
  const nodes: Proto[] = [];
  const initialisers: Proto[] = [];
  const pad = (padding: unknown) => stringAttribute("auto_pad", padding === "same" ? "SAME_UPPER" : "VALID");
  for (const layer of layers) {
    const inputs = (layer.inbound_nodes[0] ?? []).map(([name]) => (layerByName(layers, name).class_name === "InputLayer" ? ONNX_INPUT : name));
    const c = layer.config;
    switch (layer.class_name) {
      case "InputLayer":
        break;
      case "Conv2D": {
        if (c["use_bias"] || c["activation"] !== "linear") throw new Error(`${layer.name}: a bias or an activation is not expected`);
        const [kernel] = model.getLayer(layer.name).getWeights();
        const [dims, values] = convKernel({ shape: kernel!.shape, values: kernel!.dataSync() as Float32Array });
        initialisers.push(tensorProto(`${layer.name}/kernel`, dims, values));
        nodes.push(
          nodeProto("Conv", [inputs[0]!, `${layer.name}/kernel`], [layer.name], [
            intsAttribute("kernel_shape", c["kernel_size"] as number[]),
            intsAttribute("strides", c["strides"] as number[]),
            pad(c["padding"]),
          ]),
        );
        break;
      }
      case "BatchNormalization": {
        const bn = model.getLayer(layer.name);
        const values = bn.getWeights();
        const named = new Map(bn.weights.map((w, k) => [w.originalName.split("/").pop()!, values[k]!.dataSync() as Float32Array]));
        const mean = named.get("moving_mean")!, variance = named.get("moving_variance")!;
        const gamma = named.get("gamma"), beta = named.get("beta");
        const scale = new Float32Array(mean.length), shift = new Float32Array(mean.length);
        for (let k = 0; k < mean.length; k++) {
          scale[k] = (gamma?.[k] ?? 1) / Math.sqrt(variance[k]! + (c["epsilon"] as number));
          shift[k] = (beta?.[k] ?? 0) - mean[k]! * scale[k]!;
        }
        initialisers.push(tensorProto(`${layer.name}/scale`, [1, mean.length, 1, 1], scale), tensorProto(`${layer.name}/shift`, [1, mean.length, 1, 1], shift));
        nodes.push(nodeProto("Mul", [inputs[0]!, `${layer.name}/scale`], [`${layer.name}/scaled`]));
        nodes.push(nodeProto("Add", [`${layer.name}/scaled`, `${layer.name}/shift`], [layer.name]));
        break;
      }
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
  nodes.push(nodeProto("Flatten", [`${cut}/pooled`], [ONNX_OUTPUT], [intAttribute("axis", 1)]));
  const graph = new Proto().str(2, "inception_v3_features");
  for (const n of nodes) graph.msg(1, n);
  for (const t of initialisers) graph.msg(5, t);
  graph.msg(11, valueInfoProto(ONNX_INPUT, ["n", 3, size, size]));
  graph.msg(12, valueInfoProto(ONNX_OUTPUT, ["n", "features"]));
  return modelBytes(graph);
}

function layerByName(layers: readonly KerasLayer[], name: string): KerasLayer {
  const found = layers.find((l) => l.name === name);
  if (!found) throw new Error(`no layer ${name}`);
  return found;
}
