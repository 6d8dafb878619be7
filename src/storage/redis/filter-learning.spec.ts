import { describe, expect, it } from "vitest";
import { FilterLearning, LEARN_AFTER } from "./filter-learning.js";

/** Asks of `key` until one learns it: how many that took. */
function asksToLearn(learning: FilterLearning, key: string): number {
  for (let asks = 1; asks <= 10_000; asks++) if (learning.shouldLearn(key)) return asks;
  throw new Error("never learned");
}

describe("FilterLearning", () => {
  it("learns a filter on its LEARN_AFTER-th ask, each filter counted on its own", () => {
    const learning = new FilterLearning();
    for (let k = 1; k < LEARN_AFTER; k++) expect(learning.shouldLearn("a")).toBe(false);
    expect(learning.shouldLearn("b")).toBe(LEARN_AFTER <= 1);
    expect(learning.shouldLearn("a")).toBe(true);
  });

  it("waits twice as long after a learned set written away before it served its wait, and no longer once one did", () => {
    const learning = new FilterLearning();
    expect(asksToLearn(learning, "a")).toBe(LEARN_AFTER);
    learning.learned("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(2 * LEARN_AFTER);
    learning.learned("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(4 * LEARN_AFTER);
    learning.learned("a");
    for (let k = 0; k < 4 * LEARN_AFTER; k++) learning.served("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(LEARN_AFTER);
  });

  it("tries a filter with more matches than may be held again only after many asks", () => {
    const learning = new FilterLearning();
    asksToLearn(learning, "a");
    learning.tooMany("a");
    expect(asksToLearn(learning, "a")).toBeGreaterThanOrEqual(100);
  });
});
