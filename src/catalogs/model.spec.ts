import { describe, expect, it } from "vitest";
import { catalogStatus } from "./model.js";

describe("catalogStatus", () => {
  const counts = (PROCESSING: number, PROCESSED: number, ERROR: number) => ({ PROCESSING, PROCESSED, ERROR });

  it.each([
    [counts(0, 0, 0), "EMPTY"],
    [counts(1, 0, 0), "PROCESSING"],
    [counts(1, 5, 5), "PROCESSING"],
    [counts(0, 0, 3), "ERROR"],
    [counts(0, 2, 1), "WARNING"],
    [counts(0, 4, 0), "PROCESSED"],
  ] as const)("%o -> %s", (c, expected) => {
    expect(catalogStatus(c)).toBe(expected);
  });
});
