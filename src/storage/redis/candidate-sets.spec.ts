import { describe, expect, it } from "vitest";
import { CandidateSets } from "./candidate-sets.js";
import { HeldCandidates } from "./held-candidates.js";

const candidates = (n: number): HeldCandidates =>
  new HeldCandidates(Array.from({ length: n }, (_, i) => ({ productId: `p${i}`, element: new Float32Array([1, 0]), attributes: {}, words: [] })));

describe("CandidateSets", () => {
  it("holds a set by tag and posting groups, the last one stored", () => {
    const sets = new CandidateSets(100);
    sets.set("c1", [["a"]], { generation: "b:1", candidates: candidates(3) });
    expect(sets.get("c1", [["a"]])?.generation).toBe("b:1");
    expect(sets.get("c1", [["b"]])).toBeUndefined();
    expect(sets.get("c2", [["a"]])).toBeUndefined();
    // ["a","b"] in one group (in) is not ["a"] and ["b"] (two filters).
    expect(sets.get("c1", [["a", "b"]])).toBeUndefined();
    sets.set("c1", [["a"]], { generation: "b:2", candidates: candidates(4) });
    expect(sets.get("c1", [["a"]])?.generation).toBe("b:2");
  });

  it("holds at most its capacity of candidates, dropping the sets stored longest ago, and none larger", () => {
    const sets = new CandidateSets(10);
    sets.set("c", [["a"]], { generation: "1", candidates: candidates(4) });
    sets.set("c", [["b"]], { generation: "1", candidates: candidates(4) });
    sets.set("c", [["a"]], { generation: "2", candidates: candidates(4) }); // stored again: now the newest
    sets.set("c", [["c"]], { generation: "1", candidates: candidates(4) });
    expect(sets.get("c", [["b"]])).toBeUndefined();
    expect(sets.get("c", [["a"]])?.generation).toBe("2");
    expect(sets.get("c", [["c"]])).toBeDefined();
    sets.set("c", [["d"]], { generation: "1", candidates: candidates(11) });
    expect(sets.get("c", [["d"]])).toBeUndefined();
    expect(sets.get("c", [["a"]])).toBeDefined();
    const none = new CandidateSets(0);
    none.set("c", [["a"]], { generation: "1", candidates: candidates(0) });
    expect(none.get("c", [["a"]])).toBeUndefined();
  });

  it("admits a filter asked again before more than its capacity of other candidates were scored", () => {
    const sets = new CandidateSets(100);
    expect(sets.admits("c", [["a"]])).toBe(false);
    sets.noteAsked("c", [["a"]], 40);
    expect(sets.admits("c", [["a"]])).toBe(true);
    sets.noteAsked("c", [["b"]], 60);
    sets.noteAsked("c", [["x"]], 0); // answered by HNSW: no candidates scored
    expect(sets.admits("c", [["a"]])).toBe(true);
    expect(sets.admits("c", [["b"]])).toBe(true);
    sets.noteAsked("c", [["d"]], 1);
    // 101 scored since "a" was asked (its own 40 and b's 60 and d's 1).
    expect(sets.admits("c", [["a"]])).toBe(false);
    expect(sets.admits("c", [["b"]])).toBe(true);
    expect(sets.admits("d", [["b"]])).toBe(false);
    expect(new CandidateSets(0).admits("c", [["a"]])).toBe(false);
  });

  it("measures from when a filter was asked, not when its answer came back", () => {
    const sets = new CandidateSets(15);
    const askedAt = sets.scoredSoFar();
    // "b" asked after "a", answered first; then a's answer.
    sets.noteAsked("c", [["b"]], 10);
    sets.noteAsked("c", [["a"]], 10, askedAt);
    // 20 scored since "a" was asked (b's 10 and its own), though 10 since its answer.
    expect(sets.admits("c", [["a"]])).toBe(false);
  });
});
