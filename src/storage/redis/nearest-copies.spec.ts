import { describe, expect, it } from "vitest";
import { parseGeneration } from "./generation.js";
import { NearestCopies } from "./nearest-copies.js";

const red = { attributes: { colour: "red" } };

describe("NearestCopies", () => {
  it("holds nothing before a generation is known, and keeps only attributes read as of the one held", () => {
    const cache = new NearestCopies(100);
    cache.set("t", "b1:5", "p1", red);
    expect(cache.get("t", "p1")).toBeUndefined();
    expect(cache.advance("t", undefined, "b1:5", undefined)).toBe(true);
    cache.set("t", "b1:4", "p1", red);
    expect(cache.get("t", "p1")).toBeUndefined();
    cache.set("t", "b1:5", "p1", red);
    expect(cache.get("t", "p1")).toBe(red);
    expect(cache.generation("t")).toBe("b1:5");
    expect(cache.build("t")).toBe("b1");
  });

  it("keeps a product's attributes and doc together, whichever was read first", () => {
    const cache = new NearestCopies(100);
    cache.advance("t", undefined, "b1:5", undefined);
    cache.set("t", "b1:5", "p1", { doc: "#s1 red shirt" });
    cache.set("t", "b1:5", "p1", red);
    expect(cache.get("t", "p1")).toEqual({ attributes: red.attributes, doc: "#s1 red shirt" });
  });

  it("drops the products written since, and only those", () => {
    const cache = new NearestCopies(100);
    cache.advance("t", undefined, "b1:5", undefined);
    cache.set("t", "b1:5", "p1", red);
    cache.set("t", "b1:5", "p2", red);
    cache.advance("t", "b1:5", "b1:7", ["p2"]);
    expect(cache.get("t", "p1")).toBe(red);
    expect(cache.get("t", "p2")).toBeUndefined();
    expect(cache.generation("t")).toBe("b1:7");
  });

  it("lets an answer older than the generation held change nothing", () => {
    const cache = new NearestCopies(100);
    cache.advance("t", undefined, "b1:5", undefined);
    cache.set("t", "b1:5", "p1", red);
    cache.advance("t", "b1:5", "b1:9", []);
    // Sent as of 5, answered as of 8, after an answer as of 9 came back.
    expect(cache.advance("t", "b1:5", "b1:8", ["p1"])).toBe(true);
    expect(cache.get("t", "p1")).toBe(red);
    expect(cache.generation("t")).toBe("b1:9");
  });

  it("drops everything of a tag when the writes since are not known, or do not reach back to the generation held", () => {
    const cache = new NearestCopies(100);
    cache.advance("t", undefined, "b1:5", undefined);
    cache.set("t", "b1:5", "p1", red);
    cache.advance("t", "b1:5", "b1:9", undefined);
    expect(cache.get("t", "p1")).toBeUndefined();
    cache.set("t", "b1:9", "p1", red);
    // Listed since 12 (sent before a reset to 9 by another answer, say): writes 10-12 unknown.
    cache.advance("t", "b1:12", "b1:14", []);
    expect(cache.get("t", "p1")).toBeUndefined();
    expect(cache.generation("t")).toBe("b1:14");
  });

  it("starts again with another build", () => {
    const cache = new NearestCopies(100);
    cache.advance("t", undefined, "b1:5", undefined);
    cache.set("t", "b1:5", "p1", red);
    cache.advance("t", "b1:5", "b2:3", []);
    expect(cache.get("t", "p1")).toBeUndefined();
    expect(cache.build("t")).toBe("b2");
  });

  it("keeps at most its capacity, what is asked again staying", () => {
    const cache = new NearestCopies(10);
    cache.advance("t", undefined, "b1:1", undefined);
    cache.set("t", "b1:1", "kept", red);
    for (let i = 0; i < 100; i++) {
      cache.set("t", "b1:1", `p${i}`, red);
      expect(cache.get("t", "kept")).toBe(red);
    }
    const held = Array.from({ length: 100 }, (_, i) => cache.get("t", `p${i}`)).filter((a) => a !== undefined);
    expect(held.length).toBeLessThanOrEqual(10);
    expect(cache.get("t", "p99")).toBe(red);
  });

  it("holds nothing with no capacity", () => {
    const cache = new NearestCopies(0);
    expect(cache.advance("t", undefined, "b1:1", undefined)).toBe(false);
    cache.set("t", "b1:1", "p1", red);
    expect(cache.get("t", "p1")).toBeUndefined();
    expect(cache.generation("t")).toBeUndefined();
  });

  it("reads generations whose build holds colons", () => {
    expect(parseGeneration("h:abc:12")).toEqual({ build: "h:abc", count: 12 });
    expect(parseGeneration("nocount")).toBeUndefined();
  });
});
