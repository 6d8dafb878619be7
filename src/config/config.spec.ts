import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";

describe("IMAGE_RUNTIME", () => {
  it("defaults to auto: ONNX Runtime when it loads, else tfjs", () => {
    expect(loadConfig({}).processing.imageRuntime).toBe("auto");
    expect(loadConfig({ IMAGE_RUNTIME: "" }).processing.imageRuntime).toBe("auto");
  });

  it("forces either runtime", () => {
    expect(loadConfig({ IMAGE_RUNTIME: "onnxruntime" }).processing.imageRuntime).toBe("onnxruntime");
    expect(loadConfig({ IMAGE_RUNTIME: "tfjs" }).processing.imageRuntime).toBe("tfjs");
  });

  it("rejects anything else, naming the variable", () => {
    expect(() => loadConfig({ IMAGE_RUNTIME: "gpu" })).toThrow(ConfigError);
    expect(() => loadConfig({ IMAGE_RUNTIME: "wasm" })).toThrow(/IMAGE_RUNTIME/);
  });
});

describe("processing workers", () => {
  it("defaults to one worker process per core, 10 nice steps below the service, batches of 64", () => {
    const { processing } = loadConfig({});
    expect(processing.workers).toBe(availableParallelism());
    expect(processing.workerNiceness).toBe(10);
    expect(processing.batchSize).toBe(64);
    expect(loadConfig({ WORKERS: "0", WORKER_NICENESS: "0" }).processing).toMatchObject({ workers: 0, workerNiceness: 0 });
  });

  it("rejects a niceness outside 0-19, naming the variable", () => {
    expect(() => loadConfig({ WORKER_NICENESS: "20" })).toThrow(/WORKER_NICENESS/);
    expect(() => loadConfig({ WORKER_NICENESS: "-1" })).toThrow(ConfigError);
  });
});
