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

  it("admits a filter asked before whose set would go in: into free room, or pushing out sets expected back later", () => {
    const sets = new CandidateSets(100);
    expect(sets.admits("c", [["a"]])).toBe(false); // never asked
    sets.noteAsked("c", [["a"]], 40);
    expect(sets.admits("c", [["a"]])).toBe(true);
    expect(sets.admits("d", [["a"]])).toBe(false);
    sets.noteAsked("c", [["huge"]], 101);
    expect(sets.admits("c", [["huge"]])).toBe(false); // more than the capacity
    expect(new CandidateSets(0).admits("c", [["a"]])).toBe(false);
  });

  it("when full, admits a filter only if sets expected back later than it would make room, and drops those", () => {
    const sets = new CandidateSets(100);
    sets.noteAsked("c", [["z"]], 40); // asked once, at 0
    // "x" asked at 40 and 340 (expected back at 640), "y" at 390 and 490 (at 590): full.
    sets.noteAsked("c", [["x"]], 50);
    sets.noteAsked("c", [["pad"]], 250);
    sets.noteAsked("c", [["x"]], 50);
    sets.set("c", [["x"]], { generation: "1", candidates: candidates(50) });
    sets.noteAsked("c", [["y"]], 50);
    sets.noteAsked("c", [["pad"]], 50);
    sets.noteAsked("c", [["y"]], 50);
    sets.set("c", [["y"]], { generation: "1", candidates: candidates(50) });
    // Now 540. "z", 540 unasked, would be expected back at 1080, after both: not admitted.
    expect(sets.admits("c", [["z"]])).toBe(false);
    // "b" asked at 540, and again at 580: expected back at 620, before "x", after "y".
    sets.noteAsked("c", [["b"]], 40);
    expect(sets.admits("c", [["b"]])).toBe(true);
    sets.noteAsked("c", [["b"]], 40);
    sets.set("c", [["b"]], { generation: "1", candidates: candidates(40) });
    expect(sets.get("c", [["b"]])).toBeDefined();
    expect(sets.get("c", [["x"]])).toBeUndefined();
    expect(sets.get("c", [["y"]])).toBeDefined();
  });

  it("measures from when a filter was asked, not when its answer came back", () => {
    const sets = new CandidateSets(20);
    sets.noteAsked("c", [["x"]], 10);
    sets.noteAsked("c", [["pad"]], 33);
    sets.noteAsked("c", [["x"]], 10); // asked at 43, 43 after its first ask: expected back at 86
    sets.set("c", [["x"]], { generation: "1", candidates: candidates(10) });
    const askedAt = sets.scoredSoFar();
    // "a" asked at 53, "b" answered first, then a's answer.
    sets.noteAsked("c", [["b"]], 10);
    sets.noteAsked("c", [["a"]], 11, askedAt);
    // Now 74: 21 since "a" was asked, so it is expected back at 95, after "x" (86); measured from
    // its answer, it would be 85.
    expect(sets.admits("c", [["a"]])).toBe(false);
  });

  /** One query of a filter, in the order slot-index.ts takes them; whether its set was held. */
  function ask(sets: CandidateSets, value: string, size: number): boolean {
    const held = sets.get("c", [[value]]) !== undefined;
    const admitted = held || sets.admits("c", [[value]]);
    const askedAt = sets.scoredSoFar();
    sets.noteAsked("c", [[value]], size, askedAt);
    if (!held && admitted) sets.set("c", [[value]], { generation: "1", candidates: candidates(size) });
    return held;
  }

  it("asked in turn just past its capacity, keeps all sets but one held (not each pushed out before its turn)", () => {
    // Eleven filters of 10 candidates in turn through 105: each is asked again 110 candidates
    // later, so none would be admitted; with a few asked twice as often, all are.
    const sets = new CandidateSets(105);
    const order = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
    let hits = 0;
    for (let round = 0; round < 20; round++) {
      for (const value of order) {
        const held = ask(sets, value, 10);
        if (round >= 10) hits += held ? 1 : 0;
      }
    }
    expect(hits).toBeGreaterThanOrEqual(9 * 10);
  });

  it("lets a set no longer asked drift out: twice overdue, it is expected as long again as it went unasked", () => {
    const sets = new CandidateSets(20);
    ask(sets, "old", 10);
    ask(sets, "old", 10); // asked again after 10: expected every 10
    for (let k = 0; k < 10; k++) ask(sets, "other" + k, 1); // 10 scored since: not yet twice overdue
    ask(sets, "hot", 5);
    ask(sets, "hot", 5);
    ask(sets, "hot", 5);
    // "hot" is expected back 5 on; "old", now 25 unasked, 25 on: "old" is the one dropped once the cache is full.
    ask(sets, "big", 10);
    ask(sets, "big", 10);
    expect(sets.get("c", [["big"]])).toBeDefined();
    expect(sets.get("c", [["old"]])).toBeUndefined();
    expect(sets.get("c", [["hot"]])).toBeDefined();
  });
});
