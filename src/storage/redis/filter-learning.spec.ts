import { describe, expect, it } from "vitest";
import { asksBeforeLearning, FilterLearning } from "./filter-learning.js";

const ELEMENTS = 100_000;
const BASE = asksBeforeLearning(ELEMENTS);

/** Asks of `key` until one learns it: how many that took. */
function asksToLearn(learning: FilterLearning, key: string, elements = ELEMENTS): number {
  for (let asks = 1; asks <= 10_000; asks++) if (learning.shouldLearn(key, elements)) return asks;
  throw new Error("never learned");
}

describe("asksBeforeLearning", () => {
  it("waits for as many asks as the set's scan costs, and for the second ask at least", () => {
    expect(asksBeforeLearning(0)).toBe(2);
    expect(asksBeforeLearning(3000)).toBe(2);
    expect(asksBeforeLearning(100_000)).toBe(5);
    expect(asksBeforeLearning(500_000)).toBe(21);
  });
});

describe("FilterLearning", () => {
  it("learns a filter on the ask its set's size says, each filter counted on its own", () => {
    const learning = new FilterLearning();
    for (let k = 1; k < BASE; k++) expect(learning.shouldLearn("a", ELEMENTS)).toBe(false);
    expect(learning.shouldLearn("b", ELEMENTS)).toBe(false);
    expect(learning.shouldLearn("a", ELEMENTS)).toBe(true);
    expect(asksToLearn(learning, "c", 1000)).toBe(2);
  });

  it("waits twice as long after a learned set lost before it served its wait, and no longer once one did", () => {
    const learning = new FilterLearning();
    expect(asksToLearn(learning, "a")).toBe(BASE);
    learning.learned("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(2 * BASE);
    learning.learned("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(4 * BASE);
    learning.learned("a");
    for (let k = 0; k < 4 * BASE; k++) learning.served("a");
    learning.lost("a");
    expect(asksToLearn(learning, "a")).toBe(BASE);
  });

  it("follows the set's size while its wait is not doubled", () => {
    const learning = new FilterLearning();
    learning.shouldLearn("a", 1000);
    expect(asksToLearn(learning, "a", 500_000)).toBe(asksBeforeLearning(500_000) - 1);
    // Asked before the set's size was known: never learned then, but counted.
    expect(learning.shouldLearn("b", Number.POSITIVE_INFINITY)).toBe(false);
    expect(asksToLearn(learning, "b", 1000)).toBe(1);
  });

  it("learns a filter lost to writes again only once the catalog took few enough within a wait to be caught up with", () => {
    const CATCH_UP = 256;
    const learning = new FilterLearning();
    asksToLearn(learning, "a");
    learning.learned("a");
    for (let k = 0; k < BASE; k++) learning.served("a");
    learning.lost("a", "b:10");
    expect(asksToLearn(learning, "a")).toBe(BASE);
    // More writes since than a set can be caught up with (an import faster than the asks): not
    // now, and asked again after the base wait, counted from here.
    expect(learning.stillWritten("a", "b:300", CATCH_UP)).toBe(true);
    expect(asksToLearn(learning, "a")).toBe(BASE);
    expect(learning.stillWritten("a", "b:300", CATCH_UP)).toBe(false);
    expect(learning.stillWritten("a", `b:${300 + CATCH_UP}`, CATCH_UP)).toBe(false);
    expect(learning.stillWritten("a", `b:${301 + CATCH_UP}`, CATCH_UP)).toBe(true);
    // Another build since: its counts say nothing of the writes.
    expect(learning.stillWritten("a", "c:3", CATCH_UP)).toBe(true);
    learning.learned("a");
    expect(learning.stillWritten("a", "c:4000", CATCH_UP)).toBe(false);
    expect(learning.stillWritten("never asked", "b:40", CATCH_UP)).toBe(false);
  });

  it("tries a filter with more matches than may be held again only after many asks", () => {
    const learning = new FilterLearning();
    asksToLearn(learning, "a");
    learning.tooMany("a");
    expect(asksToLearn(learning, "a")).toBeGreaterThanOrEqual(100);
  });

  it("asks the catalogs' store to name a filter's products again only after many asks once it named too many, each filter on its own", () => {
    const learning = new FilterLearning();
    expect(learning.mayName("a")).toBe(true);
    learning.namedTooMany("a");
    let refused = 0;
    while (!learning.mayName("a")) refused++;
    expect(refused).toBe(256);
    expect(learning.mayName("a")).toBe(true);
    expect(learning.mayName("b")).toBe(true);
    // Its learning by a scan is not held back by it.
    expect(asksToLearn(learning, "a")).toBe(BASE);
  });
});
