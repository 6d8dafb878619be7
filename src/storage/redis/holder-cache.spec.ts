import { describe, expect, it } from "vitest";
import { HolderCache, stampLines } from "./holder-cache.js";
import type { CachedHolder } from "./holder-cache.js";

const holder = (stamp: string): CachedHolder => ({ stamp, element: new Float32Array([1, 0]), attributes: { rank: "NO_BOOST" }, words: ["reebok"] });

describe("HolderCache", () => {
  it("answers only under the stamp it was read with", () => {
    const cache = new HolderCache(10);
    cache.set("c1", "sku-1", holder("a1"));
    expect(cache.get("c1", "sku-1", "a1")?.words).toEqual(["reebok"]);
    expect(cache.get("c1", "sku-1", "a2")).toBeUndefined();
    expect(cache.get("c2", "sku-1", "a1")).toBeUndefined();
    cache.set("c1", "sku-1", holder("a2"));
    expect(cache.get("c1", "sku-1", "a1")).toBeUndefined();
    expect(cache.get("c1", "sku-1", "a2")).toBeDefined();
    expect(cache.size).toBe(1);
  });

  it("keeps at most its capacity, dropping the entry read longest ago", () => {
    const cache = new HolderCache(3);
    for (let i = 0; i < 5; i++) cache.set("c", `sku-${i}`, holder(`s${i}`));
    expect(cache.size).toBe(3);
    expect(cache.get("c", "sku-1", "s1")).toBeUndefined();
    expect(cache.get("c", "sku-2", "s2")).toBeDefined();
    // Read again: now the newest, so sku-3 goes first.
    cache.set("c", "sku-2", holder("s2b"));
    cache.set("c", "sku-5", holder("s5"));
    expect(cache.get("c", "sku-3", "s3")).toBeUndefined();
    expect(cache.get("c", "sku-2", "s2b")).toBeDefined();
  });

  it("keeps a holder whose catalog's last entry its arrival drops, and then drops the oldest of any catalog", () => {
    const cache = new HolderCache(2);
    cache.set("x", "sku-1", holder("x1"));
    cache.set("y", "sku-1", holder("y1"));
    cache.set("x", "sku-2", holder("x2"));
    cache.set("y", "sku-2", holder("y2"));
    expect(cache.get("x", "sku-2", "x2")).toBeDefined();
    expect(cache.get("y", "sku-2", "y2")).toBeDefined();
    cache.set("z", "sku-1", holder("z1"));
    expect(cache.size).toBe(2);
    expect(cache.get("x", "sku-2", "x2")).toBeUndefined();
    expect(cache.get("y", "sku-2", "y2")).toBeDefined();
    expect(cache.get("z", "sku-1", "z1")).toBeDefined();
  });

  it("drops in order of setting however many times entries were set again, and keeps its queue of them bounded", () => {
    const cache = new HolderCache(3);
    for (let i = 0; i < 20_000; i++) cache.set("c", `sku-${i % 2}`, holder(`s${i}`));
    expect(cache.size).toBe(2);
    // sku-0 was set last at 19,998, sku-1 at 19,999: sku-0 goes first.
    cache.set("c", "sku-2", holder("t2"));
    cache.set("c", "sku-3", holder("t3"));
    expect(cache.get("c", "sku-0", "s19998")).toBeUndefined();
    expect(cache.get("c", "sku-1", "s19999")).toBeDefined();
    expect(cache.size).toBe(3);
    expect((cache as unknown as { queue: unknown[] }).queue.length).toBeLessThan(2 * 3 + 4096 + 2);
  });

  it("keeps nothing with capacity 0 or without a stamp (builds written before stamps)", () => {
    const none = new HolderCache(0);
    none.set("c", "sku-1", holder("a1"));
    expect(none.size).toBe(0);
    const cache = new HolderCache(10);
    cache.set("c", "sku-1", holder(""));
    expect(cache.get("c", "sku-1", "")).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});

describe("stampLines", () => {
  it("reads <id> <stamp> lines, with or without a trailing newline", () => {
    expect(stampLines("")).toEqual([]);
    expect(stampLines("p1 a.1\np2 b.7\n")).toEqual([
      { productId: "p1", stamp: "a.1" },
      { productId: "p2", stamp: "b.7" },
    ]);
    expect(stampLines("p1 a.1")).toEqual([{ productId: "p1", stamp: "a.1" }]);
  });
});
