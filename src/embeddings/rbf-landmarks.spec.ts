// The landmark kernel on its own: one photo at a time (the map's apply) agrees with the batch form
// (the fit), zeros in the input included; landmarks and bandwidth are chosen deterministically.
import { describe, expect, it } from "vitest";
import { chooseLandmarks, fitKernelRidge, landmarkKernel } from "./rbf-landmarks.js";

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** n x d rows, about half of the values zero (as MobileNet's features are). */
function sparseRows(seed: number, n: number, d: number): Float64Array {
  const rand = random(seed);
  return Float64Array.from({ length: n * d }, () => (rand() < 0.5 ? 0 : rand()));
}

describe("landmark kernel", () => {
  it("evaluates one input as the batch form does, zeros included", () => {
    const n = 9, d = 13, m = 7;
    const rows = sparseRows(1, n, d);
    const columns = new Float32Array(sparseRows(2, d, m));
    const kernel = landmarkKernel(columns, m, d, 0.3);
    const batch = kernel.evaluateRows(rows, n); // m x n
    const one = new Float64Array(m);
    for (let r = 0; r < n; r++) {
      kernel.evaluate(rows.subarray(r * d, (r + 1) * d), one);
      for (let c = 0; c < m; c++) {
        let sq = 0;
        for (let j = 0; j < d; j++) sq += (rows[r * d + j]! - columns[j * m + c]!) ** 2;
        expect(one[c]).toBeCloseTo(Math.exp(-0.3 * sq), 12);
        expect(batch[c * n + r]).toBeCloseTo(one[c]!, 12);
      }
    }
    expect(() => landmarkKernel(columns, m, d, 0)).toThrow(RangeError);
    expect(() => landmarkKernel(columns, m + 1, d, 1)).toThrow(RangeError);
  });

  it("spreads its landmarks evenly over the samples and scales the bandwidth by their median distance", () => {
    const n = 40, d = 6;
    const rows = sparseRows(3, n, d);
    const chosen = chooseLandmarks(rows, n, d, 10, 1)!;
    expect(chosen.rows).toEqual([0, 4, 8, 12, 16, 20, 24, 28, 32, 36]);
    expect(chosen.kernel.columns[2 * 10 + 3]).toBe(Math.fround(rows[12 * d + 2]!));
    const twice = chooseLandmarks(rows, n, d, 10, 2)!;
    expect(twice.kernel.gamma).toBeCloseTo(2 * chosen.kernel.gamma, 12);
    expect(chooseLandmarks(rows, n, d, 1000, 1)!.kernel.count).toBe(n);
    // Identical samples give no kernel rather than a division by zero.
    expect(chooseLandmarks(new Float64Array(n * d).fill(0.5), n, d, 10, 1)).toBeUndefined();
  });

  it("fits residuals that are a function of the landmarks' kernel", () => {
    const n = 60, d = 5, k = 3;
    const rows = sparseRows(4, n, d);
    const probe = landmarkKernel(new Float32Array(sparseRows(5, d, 4)), 4, d, 1);
    // Residuals: a smooth function of the inputs, centred.
    const residuals = new Float64Array(k * n);
    const values = new Float64Array(4);
    for (let r = 0; r < n; r++) {
      probe.evaluate(rows.subarray(r * d, (r + 1) * d), values);
      for (let t = 0; t < k; t++) residuals[t * n + r] = values[t]! - values[t + 1]!;
    }
    for (let t = 0; t < k; t++) {
      let s = 0;
      for (let r = 0; r < n; r++) s += residuals[t * n + r]!;
      for (let r = 0; r < n; r++) residuals[t * n + r] = residuals[t * n + r]! - s / n;
    }
    const products = new Float64Array(k * k);
    for (let t = 0; t < k; t++) for (let u = 0; u < k; u++) for (let r = 0; r < n; r++) products[t * k + u] = products[t * k + u]! + residuals[t * n + r]! * residuals[u * n + r]!;
    const fit = fitKernelRidge(rows, n, d, residuals, products, k, { landmarks: 60, bandwidth: 1, lambda: 1e-6 })!;
    // What is left, as the fit reports it, is what is left: checked against the residuals formed.
    const left = residuals.slice();
    for (let r = 0; r < n; r++) {
      const kr = new Float64Array(60);
      fit.kernel.evaluate(rows.subarray(r * d, (r + 1) * d), kr);
      for (let t = 0; t < k; t++) {
        let p = 0;
        for (let c = 0; c < 60; c++) p += fit.alphaT[t * 60 + c]! * (kr[c]! - fit.meanKernel[c]!);
        left[t * n + r] = left[t * n + r]! - p;
      }
    }
    let total = 0;
    for (let t = 0; t < k; t++) {
      let sq = 0;
      for (let r = 0; r < n; r++) sq += left[t * n + r]! ** 2;
      expect(fit.residualProducts[t * k + t]).toBeCloseTo(sq, 6);
      total += products[t * k + t]!;
      expect(sq).toBeLessThan(0.05 * products[t * k + t]!);
    }
    expect(total).toBeGreaterThan(0);
    expect(fit.alphaT.length).toBe(k * 60);
    expect(fit.meanKernel.length).toBe(60);
  });
});
