// Issue 12, rejected: per-word detectors from the titles (ConSE, Norouzi et al. 2014). The default
// map's recipe fitted to each title word's presence (words in >= 3 described titles; MINDF=n), a
// photo then placed at the weighted mean of its T most likely words' vectors (probability, or
// probability x idf). On fashion-dev: best F1 0.593 (T 3, x idf) against the map's 0.623, "<type>"
// P@10 up to 0.624 (T 5) against 0.600, recommendations at most 0.512 against 0.504, colour lower
// throughout; and the fit took 20 s for 1,128 photos (316 outputs instead of 100).
//   npx tsx bench/experiments/conse.ts
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { tokenize } from "../../src/embeddings/tokenize.js";
import { l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { data, report, task, te } from "./setup.js";

const base = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const baseOut = task.withheld.map((i) => base.apply(data.image[i]!, data.colour[i]!));
report("baseline map", baseOut);
const raw = task.withheld.map((i) => data.image[i]!);
report("raw image (rec only)", raw);

// vocabulary
const df = new Map<string, number>();
const toks = data.items.map((it) => [...new Set(tokenize(it.productDisplayName))]);
for (const i of task.described) for (const t of toks[i]!) df.set(t, (df.get(t) ?? 0) + 1);
const minDf = Number(process.env.MINDF ?? 3);
const vocab = [...df].filter(([w, n]) => n >= minDf && te.encode(w).some((x) => x !== 0)).map(([w]) => w);
const wordVec = vocab.map((w) => te.encode(w));
console.log(`vocab ${vocab.length}`);
const index = new Map(vocab.map((w, i) => [w, i]));
const nd = task.described.length;
const idf = vocab.map((w) => Math.log(nd / df.get(w)!));
const ysamples = task.described.map((i) => {
  const y = new Float32Array(vocab.length);
  for (const t of toks[i]!) { const j = index.get(t); if (j !== undefined) y[j] = 1; }
  return { image: data.image[i]!, colour: data.colour[i]!, text: y };
});
const t0 = performance.now();
const wm = fitTextImageMap(ysamples, { whitening: false, removeMeanDirection: false });
console.log(`word map fit ${Math.round(performance.now() - t0)} ms`);
// raw scores: apply normalises; fine for relative
const scores = task.withheld.map((i) => wm.apply(data.image[i]!, data.colour[i]!));
const meanY = new Float64Array(vocab.length);
for (const s of ysamples) for (let j = 0; j < vocab.length; j++) meanY[j]! += s.text[j]! / nd;
report("word scores as rec space (rec only)", scores);
for (const T of [3, 5, 10, 20, 1000]) for (const weight of ["p", "pidf"]) {
  const out = scores.map((p) => {
    const order = Array.from(p.keys()).sort((a, b) => p[b]! - p[a]!).slice(0, T);
    const v = new Float32Array(100);
    for (const j of order) { const w = Math.max(0, p[j]!) * (weight === "pidf" ? idf[j]! : 1); for (let d = 0; d < 100; d++) v[d]! += w * wordVec[j]![d]!; }
    return l2NormaliseInPlace(v);
  });
  report(`conse T=${T} ${weight}`, out);
}
await te.close();
