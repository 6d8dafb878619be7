/** float32 little-endian bytes <-> Float32Array, independent of the host's byte order. */
export function vectorToBytes(vector: Float32Array): Buffer {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes;
}

export function bytesToVector(bytes: Buffer): Float32Array {
  const vector = new Float32Array(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}
