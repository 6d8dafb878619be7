// Picks and initialises the TensorFlow.js backend once per process: the native TensorFlow binding
// when @tensorflow/tfjs-node happens to be installed (several times faster), otherwise the
// WebAssembly backend, whose .wasm files ship inside the npm package (no download at run time).
import { createRequire } from "node:module";
import path from "node:path";
import * as tf from "@tensorflow/tfjs-core";
import { withoutNewProcessHandlers } from "./process-handlers.js";

export interface TfBackendInfo {
  name: "tensorflow" | "wasm";
  simd: boolean;
  initMs: number;
}

const require = createRequire(import.meta.url);
let ready: Promise<TfBackendInfo> | undefined;

export function initTfBackend(log: (msg: string) => void = () => undefined): Promise<TfBackendInfo> {
  ready ??= init(log).catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

async function init(log: (msg: string) => void): Promise<TfBackendInfo> {
  const t0 = performance.now();
  if (await tryNativeBackend(log)) return { name: "tensorflow", simd: false, initMs: performance.now() - t0 };
  const simd = await withoutNewProcessHandlers(initWasm);
  return { name: "wasm", simd, initMs: performance.now() - t0 };
}

async function tryNativeBackend(log: (msg: string) => void): Promise<boolean> {
  // A variable specifier: the package is optional and absent from package.json, so neither
  // TypeScript nor a bundler should try to resolve it.
  const specifier = "@tensorflow/tfjs-node";
  try {
    await import(specifier);
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" && String(err).includes(specifier);
    if (!missing) log(`@tensorflow/tfjs-node is installed but cannot load (${String(err)}); using the wasm backend`);
    return false;
  }
  try {
    if (await tf.setBackend("tensorflow")) {
      await tf.ready();
      return true;
    }
  } catch (err) {
    log(`@tensorflow/tfjs-node is installed but failed to start (${String(err)}); using the wasm backend`);
  }
  return false;
}

async function initWasm(): Promise<boolean> {
  const wasm = await import("@tensorflow/tfjs-backend-wasm");
  // The directory form lets the backend choose tfjs-backend-wasm{,-simd}.wasm itself. The
  // threaded build cannot start on Node 20 (it spawns pthread workers from Blob URLs), and tfjs
  // already disables it there.
  const distDir = path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm")) + path.sep;
  wasm.setWasmPaths(distDir);
  if (!(await tf.setBackend("wasm"))) throw new Error("the TensorFlow.js wasm backend failed to initialise");
  await tf.ready();
  return Boolean(await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT"));
}
