import { describe, expect, it } from "vitest";
import { bytesToVector, vectorToBytes, VectorSlabs } from "./fp32.js";

/** `vector`'s bytes at an odd offset of a larger buffer, as a reply's bulk strings arrive. */
function unaligned(vector: Float32Array): Buffer {
  const bytes = vectorToBytes(vector);
  const framed = Buffer.alloc(bytes.length + 3);
  bytes.copy(framed, 1);
  return framed.subarray(1, 1 + bytes.length);
}

describe("VectorSlabs", () => {
  it("copies each vector whole and apart from the others, across slabs and past a slab's size", () => {
    const slabs = new VectorSlabs();
    const vectors = Array.from({ length: 25 }, (_, k) => Float32Array.from({ length: k === 20 ? 1500 : 203 }, (_, i) => k + i / 1000));
    const sources = vectors.map(unaligned);
    const copies = sources.map((bytes) => slabs.copy(bytes));
    for (const source of sources) source.fill(0);
    copies.forEach((copy, k) => expect(copy, `vector ${k}`).toEqual(vectors[k]));
    // Ten of 203 floats share an 8 KB slab; the eleventh starts another.
    expect(copies[0]!.buffer).toBe(copies[9]!.buffer);
    expect(copies[10]!.buffer).not.toBe(copies[9]!.buffer);
    expect(copies[20]!.buffer).not.toBe(copies[19]!.buffer);
    expect(bytesToVector(vectorToBytes(copies[3]!))).toEqual(vectors[3]);
  });
});
