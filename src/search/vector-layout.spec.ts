import { describe, expect, it } from "vitest";
import { elementVector, elementVisual } from "./vector-layout.js";

function unit(values: number[]): Float32Array {
  const norm = Math.hypot(...values);
  return Float32Array.from(values, (x) => x / norm);
}

describe("elementVisual", () => {
  const visual = unit([0.3, -0.2, 0.9, 0.1]);
  const text = unit([0.5, 0.5, -0.5, 0.1, 0.2]);

  it("recovers the visual vector an element was built from, whatever the rank", () => {
    for (const rank of ["NO_BOOST", "BOOST", "SUPER_BOOST"] as const) {
      const recovered = elementVisual(elementVector(visual, text, rank), text.length);
      expect(recovered?.length).toBe(visual.length);
      recovered!.forEach((x, i) => expect(x).toBeCloseTo(visual[i]!, 6));
    }
  });

  it("gives a zero visual back as zero", () => {
    const recovered = elementVisual(elementVector(new Float32Array(4), text, "NO_BOOST"), text.length);
    expect([...recovered!]).toEqual([0, 0, 0, 0]);
  });

  it("refuses an element too short for the text's length", () => {
    expect(elementVisual(new Float32Array(8), 5)).toBeUndefined();
  });
});
