import { describe, expect, it } from "vitest";
import { recommendationVisual } from "./visual-space.js";

describe("recommendationVisual", () => {
  it("is the subject's photo when it has no descriptor", () => {
    const photo = Float32Array.from([0.6, 0.8, 0]);
    expect(recommendationVisual(photo, new Float32Array(3))).toBe(photo);
  });

  it("is the unit mean of the photo and the descriptor when it has one", () => {
    const out = recommendationVisual(Float32Array.from([1, 0, 0]), Float32Array.from([0, 1, 0]));
    expect([...out].map((v) => v.toFixed(6))).toEqual([Math.SQRT1_2, Math.SQRT1_2, 0].map((v) => v.toFixed(6)));
  });
});
