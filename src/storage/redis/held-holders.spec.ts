import { describe, expect, it } from "vitest";
import { HeldHolders, QUIET_MS } from "./held-holders.js";

const shirts = { lines: "p1 s1\np2 s2", more: false, commonWords: [] };
const every = { lines: "p3 s3", more: true, commonWords: ["every"] };

/** A HeldHolders on a clock the test moves. */
function held(limits = { entries: 10, chars: 1000 }) {
  let now = 0;
  const holders = new HeldHolders(limits, () => now);
  return { holders, wait: (ms: number) => void (now += ms) };
}

describe("HeldHolders", () => {
  it("offers holders once their generation has stood for QUIET_MS, and only as of it", () => {
    const { holders, wait } = held();
    holders.set("t", "shirt", "b1:5", shirts);
    expect(holders.get("t", "shirt", "b1:5")).toBeUndefined();
    wait(QUIET_MS - 1);
    expect(holders.get("t", "shirt", "b1:5")).toBeUndefined();
    wait(1);
    expect(holders.get("t", "shirt", "b1:5")).toBe(shirts);
    expect(holders.get("t", "shirt", "b1:4")).toBeUndefined();
    expect(holders.get("t", "other", "b1:5")).toBeUndefined();
    expect(holders.get("u", "shirt", "b1:5")).toBeUndefined();
  });

  it("drops holders once a later generation of the tag is seen, and ignores an earlier one", () => {
    const { holders, wait } = held();
    holders.set("t", "shirt", "b1:5", shirts);
    wait(QUIET_MS);
    holders.observe("t", "b1:4");
    expect(holders.get("t", "shirt", "b1:5")).toBe(shirts);
    holders.observe("t", "b1:6");
    wait(QUIET_MS);
    expect(holders.get("t", "shirt", "b1:5")).toBeUndefined();
    // Read as of a generation older than the one seen: not held.
    holders.set("t", "shirt", "b1:5", shirts);
    expect(holders.get("t", "shirt", "b1:6")).toBeUndefined();
    // Another build is another generation whatever its count.
    holders.set("t", "shirt", "b2:1", shirts);
    wait(QUIET_MS);
    expect(holders.get("t", "shirt", "b2:1")).toBe(shirts);
  });

  it("keeps at most its entries and characters, the least recently asked going first", () => {
    const { holders, wait } = held({ entries: 2, chars: 16 });
    holders.set("t", "a", "b1:1", shirts);
    holders.set("t", "b", "b1:1", every);
    wait(QUIET_MS);
    expect(holders.get("t", "a", "b1:1")).toBe(shirts);
    holders.set("t", "c", "b1:1", every);
    wait(QUIET_MS);
    expect(holders.get("t", "b", "b1:1")).toBeUndefined();
    expect(holders.get("t", "a", "b1:1")).toBe(shirts);
    // 11 + 5 characters held; 5 more pass 16, and the least recently asked ("c") goes.
    holders.set("t", "d", "b1:1", every);
    expect(holders.get("t", "c", "b1:1")).toBeUndefined();
    expect(holders.get("t", "a", "b1:1")).toBe(shirts);
    expect(holders.get("t", "d", "b1:1")).toBe(every);
    // Lines longer than all the room are not held.
    holders.set("t", "e", "b1:1", { ...every, lines: "x".repeat(17) });
    expect(holders.get("t", "e", "b1:1")).toBeUndefined();
  });

  it("holds nothing with no room", () => {
    const { holders, wait } = held({ entries: 0, chars: 1000 });
    holders.set("t", "a", "b1:1", shirts);
    wait(QUIET_MS);
    expect(holders.get("t", "a", "b1:1")).toBeUndefined();
  });
});
