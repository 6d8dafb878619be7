// The text-to-image map on synthetic data with a known linear relation, and the linear algebra
// under it. No models, no photos: fast and deterministic (seeded random numbers).
import { describe, expect, it } from "vitest";
import { choleskyInPlace, choleskySolveRowsInPlace, rowDots } from "../../src/embeddings/linear-algebra.js";
import { DEFAULT_KERNEL, fitTextImageMap, textImageMapFromBytes, type TextImageSample } from "../../src/embeddings/text-image-map.js";
import { seededRandom as random } from "../support/random.js";


function gaussian(rand: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};
const norm = (a: ArrayLike<number>) => Math.sqrt(dot(a, a));
const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => dot(a, b) / (norm(a) * norm(b));
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

interface World {
  /** t = M [image | colour] + offset, M is k x (di + dc), row-major. */
  m: Float64Array;
  offset: Float64Array;
  di: number;
  dc: number;
  k: number;
  sample(noise?: number): TextImageSample;
  /** M z (no offset, no noise) for an input z = [image | colour]. */
  signal(image: ArrayLike<number>, colour: ArrayLike<number>): Float64Array;
}

/** A world where text vectors are a linear function of the inputs; inputs have non-zero means. */
function world(seed: number, di: number, dc: number, k: number): World {
  const rand = random(seed);
  const g = gaussian(rand);
  const d = di + dc;
  const m = Float64Array.from({ length: k * d }, () => g() / Math.sqrt(d));
  const offset = Float64Array.from({ length: k }, () => g());
  const inputMean = Float64Array.from({ length: d }, () => 0.5 + rand());
  const signal = (image: ArrayLike<number>, colour: ArrayLike<number>) => {
    const out = new Float64Array(k);
    for (let t = 0; t < k; t++) {
      let s = 0;
      for (let j = 0; j < di; j++) s += m[t * d + j]! * image[j]!;
      for (let j = 0; j < dc; j++) s += m[t * d + di + j]! * colour[j]!;
      out[t] = s;
    }
    return out;
  };
  return {
    m, offset, di, dc, k, signal,
    sample(noise = 0) {
      const image = Float32Array.from({ length: di }, (_, j) => inputMean[j]! + g());
      const colour = Float32Array.from({ length: dc }, (_, j) => inputMean[di + j]! + g());
      const s = signal(image, colour);
      const text = Float32Array.from(s, (v, t) => v + offset[t]! + noise * g());
      return { image, colour, text };
    },
  };
}

/** The linear ridge alone: what the tests of known linear relations check. */
const plain = { whitening: false, removeMeanDirection: false, kernel: false } as const;

/** What the plain map should output: M (z - mean z), the centred prediction. */
function expected(w: World, train: TextImageSample[], s: TextImageSample): Float64Array {
  const meanImage = Array.from({ length: w.di }, (_, j) => mean(train.map((x) => x.image[j]!)));
  const meanColour = Array.from({ length: w.dc }, (_, j) => mean(train.map((x) => x.colour[j]!)));
  return w.signal(
    Array.from(s.image, (v, j) => v - meanImage[j]!),
    Array.from(s.colour, (v, j) => v - meanColour[j]!),
  );
}

describe("linear algebra", () => {
  it("rowDots matches plain dot products, symmetric or not, at sizes that are not multiples of 4", () => {
    const g = gaussian(random(1));
    for (const [ra, rb, len] of [[1, 1, 1], [5, 3, 7], [8, 9, 13], [13, 4, 5]] as const) {
      const a = Float64Array.from({ length: ra * len }, g);
      const b = Float64Array.from({ length: rb * len }, g);
      const cross = rowDots(a, ra, len, b, rb);
      const gram = rowDots(a, ra, len);
      for (let i = 0; i < ra; i++) {
        for (let j = 0; j < rb; j++) expect(cross[i * rb + j]).toBeCloseTo(dot(a.subarray(i * len, (i + 1) * len), b.subarray(j * len, (j + 1) * len)), 12);
        for (let j = 0; j < ra; j++) expect(gram[i * ra + j]).toBeCloseTo(dot(a.subarray(i * len, (i + 1) * len), a.subarray(j * len, (j + 1) * len)), 12);
      }
    }
  });

  it("Cholesky solves a positive definite system for several right-hand sides", () => {
    const g = gaussian(random(2));
    for (const size of [1, 6, 17]) {
      const x = Float64Array.from({ length: size * (size + 3) }, g);
      const a = rowDots(x, size, size + 3);
      for (let i = 0; i < size; i++) a[i * size + i] = a[i * size + i]! + 0.1;
      const wanted = Float64Array.from({ length: 5 * size }, g);
      const rhs = new Float64Array(5 * size);
      for (let r = 0; r < 5; r++) for (let i = 0; i < size; i++) rhs[r * size + i] = dot(a.subarray(i * size, (i + 1) * size), wanted.subarray(r * size, (r + 1) * size));
      const l = new Float64Array(a);
      choleskyInPlace(l, size);
      choleskySolveRowsInPlace(l, size, rhs, 5);
      rhs.forEach((v, i) => expect(v).toBeCloseTo(wanted[i]!, 8));
    }
    expect(() => choleskyInPlace(Float64Array.from([1, 2, 2, 1]), 2)).toThrow(/positive definite/);
  });
});

describe("fitTextImageMap", () => {
  it("recovers a known linear relation (n > d, primal)", () => {
    const w = world(10, 24, 6, 12);
    const train = Array.from({ length: 400 }, () => w.sample());
    const map = fitTextImageMap(train, { ...plain, lambda: 1e-6 });
    expect(map.inputDimensions).toBe(30);
    expect(map.outputDimensions).toBe(12);
    expect(map.trainedOn).toBe(400);
    for (let i = 0; i < 20; i++) {
      const s = w.sample();
      const out = map.apply(s.image, s.colour);
      expect(norm(out)).toBeCloseTo(1, 5);
      expect(cosine(out, expected(w, train, s))).toBeGreaterThan(0.99999);
    }
  });

  it("fits noiseless data with the default options too (nothing to whiten)", () => {
    for (const [n, di] of [[300, 24], [20, 60]] as const) {
      const w = world(20 + n, di, 6, 12);
      const train = Array.from({ length: n }, () => w.sample());
      const map = fitTextImageMap(train, { lambda: 1e-9 });
      const textMean = Array.from({ length: w.k }, (_, t) => mean(train.map((s) => s.text[t]!)));
      const u = textMean.map((v) => v / norm(textMean));
      for (const s of n > di ? Array.from({ length: 10 }, () => w.sample()) : train.slice(0, 10)) {
        const e = expected(w, train, s);
        const projected = e.map((v, t) => v - dot(e, u) * u[t]!);
        expect(cosine(map.apply(s.image, s.colour), projected)).toBeGreaterThan(0.9999);
      }
    }
  });

  it("fits its training pairs when there are fewer samples than dimensions (n < d, dual)", () => {
    const w = world(11, 120, 11, 20);
    const train = Array.from({ length: 50 }, () => w.sample(0.3));
    const map = fitTextImageMap(train, { ...plain, lambda: 1e-8 });
    const textMean = Array.from({ length: w.k }, (_, t) => mean(train.map((s) => s.text[t]!)));
    // With almost no penalty the map interpolates: each training photo lands on its own centred text.
    for (const s of train.slice(0, 10)) {
      expect(cosine(map.apply(s.image, s.colour), Array.from(s.text, (v, t) => v - textMean[t]!))).toBeGreaterThan(0.9999);
    }
    // And it generalises: well above chance on fresh samples.
    const fresh = Array.from({ length: 50 }, () => w.sample());
    expect(mean(fresh.map((s) => cosine(map.apply(s.image, s.colour), expected(w, train, s))))).toBeGreaterThan(0.4);
  });

  it("gives the same map through the primal and the dual form", () => {
    // Every sample twice with lambda doubled is the same problem: 30 samples take the dual route
    // (30 < 41 dimensions), 60 the primal one. (The kernel step would see duplicate landmarks.)
    const w = world(12, 35, 6, 9);
    const train = Array.from({ length: 30 }, () => w.sample(0.5));
    const dual = fitTextImageMap(train, { lambda: 0.2, kernel: false });
    const primal = fitTextImageMap([...train, ...train], { lambda: 0.4, kernel: false });
    for (let i = 0; i < 10; i++) {
      const s = w.sample();
      const a = dual.apply(s.image, s.colour);
      const b = primal.apply(s.image, s.colour);
      a.forEach((v, t) => expect(v).toBeCloseTo(b[t]!, 5));
    }
  });

  it("shrinks towards the input-output cross-covariance as lambda grows, and overfits less", () => {
    const w = world(13, 20, 4, 8);
    const train = Array.from({ length: 300 }, () => w.sample());
    // lambda -> infinity: W -> X^T Y / lambda, so the output direction is M C (z - mean z), C the
    // inputs' covariance, not M (z - mean z).
    const huge = fitTextImageMap(train, { ...plain, lambda: 1e9 });
    const d = w.di + w.dc;
    const inputs = train.map((s) => [...s.image, ...s.colour]);
    const mu = Array.from({ length: d }, (_, j) => mean(inputs.map((z) => z[j]!)));
    const covariance = (i: number, j: number) => mean(inputs.map((z) => (z[i]! - mu[i]!) * (z[j]! - mu[j]!)));
    const c = Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_, j) => covariance(i, j)));
    const s = w.sample();
    const z = [...s.image, ...s.colour].map((v, j) => v - mu[j]!);
    const cz = c.map((row) => dot(row, z));
    expect(cosine(huge.apply(s.image, s.colour), w.signal(cz.slice(0, w.di), cz.slice(w.di)))).toBeGreaterThan(0.9999);
    expect(cosine(huge.apply(s.image, s.colour), expected(w, train, s))).toBeLessThan(0.999);

    // Noisy and short of data (n < d): a moderate penalty beats interpolating the noise.
    const noisy = world(14, 80, 0, 10);
    const few = Array.from({ length: 60 }, () => noisy.sample(2));
    const fresh = Array.from({ length: 100 }, () => noisy.sample());
    const quality = (lambda: number) => {
      const map = fitTextImageMap(few, { ...plain, lambda });
      return mean(fresh.map((x) => cosine(map.apply(x.image, x.colour), expected(noisy, few, x))));
    };
    expect(quality(30)).toBeGreaterThan(quality(1e-6) + 0.05);

    expect(() => fitTextImageMap(train, { lambda: 0 })).toThrow(RangeError);
    expect(() => fitTextImageMap(train, { lambda: -1 })).toThrow(RangeError);
  });

  it("learns what is not linear in the inputs with its kernel step", () => {
    // Photos in 40 tight clusters of a 5-d space, each with its own text, the clusters placed at
    // random: a linear map cannot give each cluster its text, kernel ridge on landmarks can.
    const rand = random(30);
    const g = gaussian(rand);
    const di = 4, dc = 1, k = 10, clusters = 40;
    const centres = Array.from({ length: clusters }, () => Float32Array.from({ length: di + dc }, () => g()));
    const texts = Array.from({ length: clusters }, () => Float32Array.from({ length: k }, () => g()));
    const sample = (c: number): TextImageSample => {
      const z = centres[c]!.map((v) => v + 0.03 * g());
      return { image: z.slice(0, di), colour: z.slice(di), text: texts[c]!.map((v) => v + 0.1 * g()) };
    };
    const train = Array.from({ length: 800 }, (_, i) => sample(i % clusters));
    const textMean = Array.from({ length: k }, (_, t) => mean(train.map((s) => s.text[t]!)));
    const quality = (map: ReturnType<typeof fitTextImageMap>) =>
      mean(Array.from({ length: 120 }, (_, i) => {
        const c = i % clusters;
        const s = sample(c);
        return cosine(map.apply(s.image, s.colour), Array.from(texts[c]!, (v, t) => v - textMean[t]!));
      }));
    const options = { whitening: false, removeMeanDirection: false } as const;
    const linear = quality(fitTextImageMap(train, { ...options, kernel: false }));
    const kernel = quality(fitTextImageMap(train, { ...options, kernel: { ...DEFAULT_KERNEL, landmarks: 200, bandwidth: 8, lambda: 1e-3 } }));
    expect(linear).toBeLessThan(0.8);
    expect(kernel).toBeGreaterThan(0.95);
    for (const bad of [{ lambda: 0 }, { landmarks: 0 }, { bandwidth: -1 }, { colourWeight: Number.NaN }]) {
      expect(() => fitTextImageMap(train, { kernel: { ...DEFAULT_KERNEL, ...bad } })).toThrow(RangeError);
    }
  });

  it("removes the mean text direction from its outputs by default", () => {
    const w = world(15, 30, 5, 10);
    const train = Array.from({ length: 2000 }, () => w.sample(0.2));
    const map = fitTextImageMap(train);
    const textMean = Array.from({ length: w.k }, (_, t) => mean(train.map((s) => s.text[t]!)));
    const u = textMean.map((v) => v / norm(textMean));
    for (let i = 0; i < 10; i++) {
      const s = w.sample();
      const out = map.apply(s.image, s.colour);
      expect(Math.abs(dot(out, u))).toBeLessThan(1e-6);
      // The residuals are isotropic noise here, so whitening changes little: still the relation,
      // less its component along the mean.
      const e = expected(w, train, s);
      const projected = e.map((v, t) => v - dot(e, u) * u[t]!);
      expect(cosine(out, projected)).toBeGreaterThan(0.99);
    }
  });

  it("whitens by the residuals: text directions the inputs do not predict weigh less", () => {
    const w = world(16, 30, 5, 10);
    const g = gaussian(random(21));
    // Text dimension 0 carries loud noise the inputs know nothing of (a brand name, say).
    const train = Array.from({ length: 1000 }, () => {
      const s = w.sample(0.1);
      s.text[0] = s.text[0]! + 3 * g();
      return s;
    });
    const share = (map: ReturnType<typeof fitTextImageMap>) =>
      mean(Array.from({ length: 50 }, () => w.sample()).map((s) => Math.abs(map.apply(s.image, s.colour)[0]!)));
    const whitened = share(fitTextImageMap(train, { removeMeanDirection: false }));
    const unwhitened = share(fitTextImageMap(train, { removeMeanDirection: false, whitening: false }));
    expect(whitened).toBeLessThan(unwhitened / 5);
    expect(() => fitTextImageMap(train, { whitening: 0 })).toThrow(RangeError);
  });

  it("skips samples whose text vector is all zero", () => {
    const w = world(16, 16, 3, 6);
    const train = Array.from({ length: 80 }, () => w.sample(0.1));
    const g = gaussian(random(17));
    const junk = Array.from({ length: 25 }, () => ({
      image: Float32Array.from({ length: 16 }, () => 100 * g()),
      colour: Float32Array.from({ length: 3 }, () => 100 * g()),
      text: new Float32Array(6),
    }));
    const mixed = [...train.slice(0, 40), ...junk, ...train.slice(40)];
    const map = fitTextImageMap(mixed);
    expect(map.trainedOn).toBe(80);
    expect(map.toBytes().equals(fitTextImageMap(train).toBytes())).toBe(true);
    expect(() => fitTextImageMap(junk)).toThrow(/all-zero/);
  });

  it("round-trips through bytes exactly", () => {
    const w = world(18, 40, 11, 16);
    const train = Array.from({ length: 70 }, () => w.sample(0.3));
    const map = fitTextImageMap(train, { lambda: 0.5, colourWeight: 2 });
    const bytes = map.toBytes();
    const again = textImageMapFromBytes(bytes);
    expect(again.version).toBe(map.version);
    expect(again.inputDimensions).toBe(map.inputDimensions);
    expect(again.outputDimensions).toBe(map.outputDimensions);
    expect(again.trainedOn).toBe(map.trainedOn);
    expect(again.toBytes().equals(bytes)).toBe(true);
    for (let i = 0; i < 10; i++) {
      const s = w.sample();
      expect(again.apply(s.image, s.colour)).toEqual(map.apply(s.image, s.colour));
    }
    // A different fit is a different version.
    expect(fitTextImageMap(train, { lambda: 0.6, colourWeight: 2 }).version).not.toBe(map.version);
    // A linear map is written in the first format, which still reads.
    const linear = fitTextImageMap(train, { kernel: false });
    expect(linear.toBytes().readUInt32LE(4)).toBe(1);
    expect(textImageMapFromBytes(linear.toBytes()).apply(train[0]!.image, train[0]!.colour)).toEqual(linear.apply(train[0]!.image, train[0]!.colour));
    expect(bytes.readUInt32LE(4)).toBe(2);
    expect(bytes.length).toBeGreaterThan(linear.toBytes().length);
    // Damaged bytes are refused rather than misread.
    expect(() => textImageMapFromBytes(bytes.subarray(0, bytes.length - 4))).toThrow();
    const wrongMagic = Buffer.from(bytes);
    wrongMagic[0] = 0;
    expect(() => textImageMapFromBytes(wrongMagic)).toThrow(/magic/);
  });

  it("learns word prototypes from descriptors: a query moves towards the mapped photos of its word's products, and the prototypes persist", () => {
    const w = world(21, 40, 11, 16);
    // Two kinds of product, told apart by their inputs' first dimension; their descriptors say so.
    const train = Array.from({ length: 80 }, (_, i) => {
      const s = w.sample(0.3);
      const kind = i % 2 === 0 ? "boot" : "scarf";
      s.image[0] = kind === "boot" ? 3 : -3;
      return { ...s, text: Float32Array.from(w.signal(s.image, s.colour)), descriptor: `Red ${kind} ${i}` };
    });
    const map = fitTextImageMap(train);
    const without = fitTextImageMap(train.map(({ descriptor: _, ...s }) => s));
    const boots = train.filter((s) => s.descriptor.includes("boot")).map((s) => map.apply(s.image, s.colour));
    const scarves = train.filter((s) => s.descriptor.includes("scarf")).map((s) => map.apply(s.image, s.colour));
    const words = new Float32Array(16);
    words[0] = 1;
    const query = map.queryVisual("boot", words);
    expect(norm(query)).toBeCloseTo(1, 6);
    // Closer to the boots' mapped photos than the plain word vector is; and closer to boots than scarves.
    expect(mean(boots.map((b) => cosine(query, b)))).toBeGreaterThan(mean(boots.map((b) => cosine(words, b))));
    expect(mean(boots.map((b) => cosine(query, b)))).toBeGreaterThan(mean(scarves.map((c) => cosine(query, c))));
    // Unknown words, zero vectors and maps fitted without descriptors leave the word vector as it is.
    expect(map.queryVisual("umbrella", words)).toBe(words);
    expect(map.queryVisual("boot", new Float32Array(16)).every((v) => v === 0)).toBe(true);
    expect(without.queryVisual("boot", words)).toBe(words);
    // Persisted in the map's bytes (format 3), read back exactly.
    const bytes = map.toBytes();
    expect(bytes.readUInt32LE(4)).toBe(3);
    const again = textImageMapFromBytes(bytes);
    expect(again.version).toBe(map.version);
    expect(again.queryVisual("boot red", words)).toEqual(map.queryVisual("boot red", words));
    expect(again.apply(train[0]!.image, train[0]!.colour)).toEqual(map.apply(train[0]!.image, train[0]!.colour));
    expect(() => textImageMapFromBytes(bytes.subarray(0, bytes.length - 4))).toThrow();
    expect(map.version.startsWith("ridge3-rbf-proto1-")).toBe(true);
  });

  it("refuses inputs of the wrong shape", () => {
    const w = world(19, 8, 2, 4);
    const train = Array.from({ length: 30 }, () => w.sample());
    const map = fitTextImageMap(train);
    expect(() => map.apply(new Float32Array(7), new Float32Array(2))).toThrow(RangeError);
    expect(() => fitTextImageMap([...train, { image: new Float32Array(9), colour: new Float32Array(2), text: new Float32Array(4).fill(1) }])).toThrow(RangeError);
    expect(() => fitTextImageMap([])).toThrow(RangeError);
  });

  it("gives a zero vector, not NaN, for a photo at the mean of a degenerate catalog", () => {
    const s = { image: Float32Array.from([1, 2, 3]), colour: Float32Array.from([0.5]), text: Float32Array.from([1, 0]) };
    const map = fitTextImageMap([s, s, s]);
    expect(map.trainedOn).toBe(3);
    expect(Array.from(map.apply(s.image, s.colour))).toEqual([0, 0]);
  });
});
