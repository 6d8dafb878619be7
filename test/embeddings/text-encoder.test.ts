import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureCompactGlove } from "../../src/embeddings/glove-convert.js";
import { glovePaths, readCompactGlove } from "../../src/embeddings/glove-files.js";
import { openSentenceEncoder, type OpenedSentenceEncoder } from "../../src/embeddings/text-encoder.js";
import { cacheDir } from "../support/cache-dir.js";
import { cosine, norm } from "../support/vectors.js";

let encoder: OpenedSentenceEncoder;

beforeAll(async () => {
  // The first run on a machine converts the 307 MB JSON (seconds); every later one finds the files.
  const ensured = await ensureCompactGlove({ cacheDir, log: (m) => console.log(m) });
  if (ensured.conversion) {
    console.log(
      `GloVe conversion took ${(ensured.conversion.ms / 1000).toFixed(1)} s, peak RSS ${Math.round(ensured.conversion.peakRssBytes / 2 ** 20)} MB`,
    );
  }
  const t0 = performance.now();
  encoder = await openSentenceEncoder({ cacheDir });
  console.log(`text encoder ${encoder.version} loaded from the compact files in ${Math.round(performance.now() - t0)} ms`);
}, 300_000);

afterAll(async () => {
  await encoder?.close();
});

const zero = (v: Float32Array) => v.every((x) => x === 0);

describe("text encoder", () => {
  it("returns unit-length 100-d vectors under a stable version", () => {
    expect(encoder.version).toBe("glove100-int8-sif-pc1-v1");
    expect(encoder.dimensions).toBe(100);
    const v = encoder.encode("Red Running Shoes");
    expect(v).toBeInstanceOf(Float32Array);
    expect(v.length).toBe(100);
    expect(norm(v)).toBeCloseTo(1, 5);
  });

  it("puts 'Red Running Shoes' nearer 'crimson sneakers' than 'blue laptop bag'", () => {
    const query = encoder.encode("Red Running Shoes");
    const near = cosine(query, encoder.encode("crimson sneakers"));
    const far = cosine(query, encoder.encode("blue laptop bag"));
    console.log(`cos(red running shoes, crimson sneakers) ${near.toFixed(3)}; (…, blue laptop bag) ${far.toFixed(3)}`);
    expect(near).toBeGreaterThan(far + 0.1);
  });

  it("ranks by meaning across categories", () => {
    const q = encoder.encode("wireless headphones");
    expect(cosine(q, encoder.encode("bluetooth earbuds"))).toBeGreaterThan(cosine(q, encoder.encode("leather wallet")) + 0.2);
    const shirt = encoder.encode("Men's cotton tshirt");
    expect(cosine(shirt, encoder.encode("t-shirt for men"))).toBeGreaterThan(cosine(shirt, encoder.encode("women's handbag")));
  });

  it("returns the zero vector when no word is known", () => {
    for (const text of ["", "   ", "!!! ???", "qxzvw plorkwyb"]) expect(zero(encoder.encode(text)), JSON.stringify(text)).toBe(true);
    expect(encoder.encode("qxzvw plorkwyb").length).toBe(100);
  });

  it("ignores case, punctuation and unknown words", () => {
    const plain = Array.from(encoder.encode("red running shoes"));
    expect(Array.from(encoder.encode("RED  Running-Shoes!!"))).toEqual(plain);
    expect(Array.from(encoder.encode("red running shoes qxzvw"))).toEqual(plain);
  });

  it("understands the spellings titles use", () => {
    const same = (a: string, b: string) => expect(cosine(encoder.encode(a), encoder.encode(b)), `${a} ~ ${b}`).toBeGreaterThan(0.99);
    same("tshirts", "t-shirts");
    same("trackpants", "track pants");
    same("Café", "cafe");
    same("32GB", "32 gb");
  });

  it("is deterministic", () => {
    expect(Array.from(encoder.encode("Titan Women Gold Watch"))).toEqual(Array.from(encoder.encode("Titan Women Gold Watch")));
  });
});

describe("compact word vectors", () => {
  it("are converted once: later loads read the compact files only, quickly", async () => {
    const t0 = performance.now();
    const again = await ensureCompactGlove({ cacheDir, log: (m) => expect.fail(`unexpected: ${m}`) });
    expect(again.conversion).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(500);

    const files = glovePaths(again.dir);
    const sizes = { vectors: (await stat(files.vectors)).size, vocab: (await stat(files.vocab)).size };
    console.log(`compact files: vectors ${(sizes.vectors / 2 ** 20).toFixed(1)} MB, vocabulary ${(sizes.vocab / 2 ** 20).toFixed(1)} MB`);
    expect(sizes.vectors).toBe(again.meta.rows * (again.meta.dimensions + 4));
    expect(again.meta.rows).toBe(341_479);

    const t1 = performance.now();
    const loaded = await readCompactGlove(again.dir);
    const ms = performance.now() - t1;
    console.log(`compact word vectors read in ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(5000);
    expect(loaded.vectors.id("the")).toBe(0);
    expect(norm(loaded.commonDirection)).toBeCloseTo(1, 9);
  });

  describe("conversion", () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), "vitrine-glove-"));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it("runs once when two loaders race, and keeps the vectors", async () => {
      // A small file in wink's layout, with the awkward parts of JSON the real one could hold.
      const words = ["the", "shirt", "shoes", "red", 'say "hi"', "café", "blue"];
      const vectors = words.map((_, i) => [0.5 - i * 0.1, -1.25e-3, 3 * (i + 1), 1e-5 * i]);
      const entries = words.map((w, i) => `${JSON.stringify(w)}:[${[...vectors[i]!, 1, i].join(",")}]`);
      const source = path.join(dir, "mini.json");
      await writeFile(
        source,
        `{"precision":8,"l2NormIndex":4,"wordIndex":5,"size":${words.length},"dimensions":4,` +
          `"words":${JSON.stringify(words)},\n "vectors":{${entries.join(",\n")}},"unkVector":[0,0,0,0,0,-1]}`,
      );
      const cache = path.join(dir, "cache");
      // What a converter killed between writing and renaming leaves behind:
      await mkdir(path.join(cache, "glove100"), { recursive: true });
      await writeFile(path.join(cache, "glove100", "vectors.v1.bin.tmp-999999-abc"), "partial");
      const [a, b] = await Promise.all([
        ensureCompactGlove({ cacheDir: cache, sourceFile: source }),
        ensureCompactGlove({ cacheDir: cache, sourceFile: source }),
      ]);
      expect([a.conversion, b.conversion].filter(Boolean)).toHaveLength(1);
      expect((await readdir(a.dir)).sort()).toEqual(["meta.v1.json", "vectors.v1.bin", "vocab.v1.txt"]);

      const { vectors: loaded } = await readCompactGlove(a.dir);
      words.forEach((word, row) => {
        expect(loaded.id(word)).toBe(row);
        const v = new Float64Array(4);
        loaded.addTo(v, row, 1);
        const max = Math.max(...vectors[row]!.map(Math.abs));
        v.forEach((x, j) => expect(Math.abs(x - vectors[row]![j]!)).toBeLessThanOrEqual(max / 254 + 1e-9));
      });
    });

    it("refuses a truncated source instead of writing partial files", async () => {
      const source = path.join(dir, "truncated.json");
      await writeFile(source, `{"precision":8,"l2NormIndex":4,"wordIndex":5,"size":2,"dimensions":4,"words":["a","b"],"vectors":{"a":[1,2,3,4,5,0]`);
      const cache = path.join(dir, "cache-truncated");
      await expect(ensureCompactGlove({ cacheDir: cache, sourceFile: source })).rejects.toThrow(/ended early/);
      expect(await readdir(path.join(cache, "glove100"))).toEqual([]);
    });
  });
});
