import { endianness } from "node:os";

const LITTLE_ENDIAN_HOST = endianness() === "LE";

/**
 * A vector as FP32 little-endian bytes: what MySQL's embedding columns hold and what Redis vector
 * sets read (VADD/VSIM ... FP32), whatever the host's byte order.
 */
export function vectorToBytes(vector: Float32Array): Buffer {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(vector.buffer.slice(vector.byteOffset, vector.byteOffset + vector.byteLength));
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes;
}

/**
 * FP32 little-endian bytes back into a vector (a copy: the bytes may be unaligned). `into`, when
 * its length fits, is filled and returned instead of a new array: scoring thousands of candidate
 * blobs a query then allocates nothing per blob.
 */
export function bytesToVector(bytes: Uint8Array, into?: Float32Array): Float32Array {
  const length = bytes.length >>> 2;
  const vector = into?.length === length ? into : new Float32Array(length);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength).set(bytes.subarray(0, vector.byteLength));
    return vector;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < vector.length; i++) vector[i] = view.getFloat32(i * 4, true);
  return vector;
}

/** Floats a slab holds (8 KB, the size of Node's own Buffer pool). */
const SLAB_FLOATS = 2048;

/**
 * Copies vectors out of reply buffers, as bytesToVector does, into shared slabs of 8 KB: an
 * ArrayBuffer of its own costs each vector an allocation outside V8's heap and its tracking, more
 * than the copy (203 floats, read by the thousand when a filter's matches are read: about 2-3 us
 * each, against about 1 in slabs). 8 KB, as Node's Buffer pool, so that a vector kept long keeps at
 * most about 7 KB of others alive with it.
 */
export class VectorSlabs {
  private slab = new Float32Array(0);
  private used = 0;

  copy(bytes: Uint8Array): Float32Array {
    const length = bytes.length >>> 2;
    if (length > SLAB_FLOATS / 2) return bytesToVector(bytes);
    if (this.used + length > this.slab.length) {
      this.slab = new Float32Array(SLAB_FLOATS);
      this.used = 0;
    }
    const vector = this.slab.subarray(this.used, this.used + length);
    this.used += length;
    return bytesToVector(bytes, vector);
  }
}
