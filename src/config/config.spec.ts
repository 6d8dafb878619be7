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

describe("IMAGE_MODEL", () => {
  it("defaults to MobileNet alone; InceptionV3 beside it is opt-in", () => {
    expect(loadConfig({}).processing.imageModel).toBe("mobilenet");
    expect(loadConfig({ IMAGE_MODEL: "" }).processing.imageModel).toBe("mobilenet");
    expect(loadConfig({ IMAGE_MODEL: "mobilenet+inception" }).processing.imageModel).toBe("mobilenet+inception");
  });

  it("rejects any other model, naming the variable", () => {
    expect(() => loadConfig({ IMAGE_MODEL: "inception" })).toThrow(/IMAGE_MODEL/);
    expect(() => loadConfig({ IMAGE_MODEL: "clip" })).toThrow(ConfigError);
  });
});

describe("REDIS_CLUSTER_NODES", () => {
  it("reads a cluster's seed nodes", () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1:7001, redis-b:7002" }).redis.clusterNodes).toEqual([
      { host: "127.0.0.1", port: 7001 },
      { host: "redis-b", port: 7002 },
    ]);
    expect(loadConfig({}).redis.clusterNodes).toBeUndefined();
  });

  it("rejects a malformed list, and a cluster together with REDIS_URL", () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1" })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "a:1,,b:2" })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "a:1", REDIS_URL: "redis://a:6379" })).toThrow(/not both/);
  });
});

describe("SEARCH_VALUE_SETS", () => {
  it("reads field names, none by default", () => {
    expect(loadConfig({}).search.valueSetFields).toEqual([]);
    expect(loadConfig({ SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: " shop, brand_id ,shop" }).search.valueSetFields).toEqual(["shop", "brand_id"]);
  });

  it("rejects other names, and value sets without postings", () => {
    expect(() => loadConfig({ SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: "shop,,brand" })).toThrow(/SEARCH_VALUE_SETS/);
    expect(() => loadConfig({ SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: "a\"b" })).toThrow(/SEARCH_VALUE_SETS/);
    expect(() => loadConfig({ SEARCH_FILTER_POSTINGS: "on", SEARCH_VALUE_SETS: "x".repeat(41) })).toThrow(/SEARCH_VALUE_SETS/);
    expect(() => loadConfig({ SEARCH_VALUE_SETS: "shop" })).toThrow(/SEARCH_FILTER_POSTINGS=on/);
  });
});

describe("SEARCH_VSIM_CONNECTIONS", () => {
  it("gives each API process 4 connections for threaded VSIMs by default, 0 to keep them in the query script", () => {
    expect(loadConfig({}).search.vsimConnections).toBe(4);
    expect(loadConfig({ SEARCH_VSIM_CONNECTIONS: "0" }).search.vsimConnections).toBe(0);
  });

  it("refuses a count it cannot use", () => {
    for (const bad of ["-1", "65", "2.5", "some"]) expect(() => loadConfig({ SEARCH_VSIM_CONNECTIONS: bad }), bad).toThrow(/SEARCH_VSIM_CONNECTIONS/);
  });
});

describe("SEARCH_HNSW_M", () => {
  it("is auto (by each set's size, from 100,000) when not set, or one whole number", () => {
    expect(loadConfig({}).search).toMatchObject({ hnswM: "auto", hnswLargeFrom: 100_000 });
    expect(loadConfig({ SEARCH_HNSW_M: "32" }).search.hnswM).toBe(32);
    expect(loadConfig({ SEARCH_HNSW_M: "auto", SEARCH_HNSW_M_LARGE_FROM: "250000" }).search).toMatchObject({ hnswM: "auto", hnswLargeFrom: 250_000 });
  });

  it("rejects anything but auto or a whole number from 4 to 64, naming the variable", () => {
    for (const bad of ["3", "65", "16.5", "many", "AUTO"]) expect(() => loadConfig({ SEARCH_HNSW_M: bad }), bad).toThrow(/SEARCH_HNSW_M/);
    for (const bad of ["0", "-5", "1.5", "lots"]) expect(() => loadConfig({ SEARCH_HNSW_M_LARGE_FROM: bad }), bad).toThrow(/SEARCH_HNSW_M_LARGE_FROM/);
  });
});

describe("SEARCH_EF_LARGE", () => {
  it("is 1,000 when not set, beside SEARCH_EF's 250", () => {
    expect(loadConfig({}).search).toMatchObject({ ef: 250, efLarge: 1000 });
    expect(loadConfig({ SEARCH_EF_LARGE: "500" }).search.efLarge).toBe(500);
  });

  it("rejects anything but a whole number from 1 to 10,000, naming the variable", () => {
    for (const bad of ["0", "10001", "2.5", "deep"]) expect(() => loadConfig({ SEARCH_EF_LARGE: bad }), bad).toThrow(/SEARCH_EF_LARGE/);
  });
});

describe("RATE_LIMIT_PER_SECOND", () => {
  it("defaults to a limit a storefront sending every shopper's calls with one key does not reach", () => {
    expect(loadConfig({}).rateLimit).toEqual({ perSecond: 1000, burst: 2000, store: "redis" });
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

describe("SEARCH_FILTER_LEARNING", () => {
  it("is on by default, turned off by off, and takes nothing else", () => {
    expect(loadConfig({}).search.filterLearning).toBe(true);
    expect(loadConfig({ SEARCH_FILTER_LEARNING: "off" }).search.filterLearning).toBe(false);
    expect(() => loadConfig({ SEARCH_FILTER_LEARNING: "yes" })).toThrow(/SEARCH_FILTER_LEARNING/);
  });
});
