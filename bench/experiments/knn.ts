// Issue 12, rejected: a photo's nearest described photos (raw features, cosine) vote with their
// titles (softmax over the K nearest), alone or added to the map's output. On fashion-dev: alone
// F1 0.52-0.57; added at half weight F1 up to 0.637 (+0.014) but colour P@10 0.458 -> 0.32-0.38
// and "<type>" P@10 down; at full weight worse on every measure.
//   npx tsx bench/experiments/knn.ts
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { dot, l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { topK } from "../eval.js";
import { data, report, task, te } from "./setup.js";

const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const mapped = task.withheld.map((i) => map.apply(data.image[i]!, data.colour[i]!));
report("map", mapped);
// mean-centred text targets, as the map's outputs are centred
const meanT = new Float32Array(100);
for (const i of task.described) for (let k = 0; k < 100; k++) meanT[k]! += data.text[i]![k]! / task.described.length;
const inp = (i: number, cw: number) => { const v = new Float32Array(1291); v.set(data.image[i]!); for (let c = 0; c < 11; c++) v[1280 + c] = cw * data.colour[i]![c]!; return v; };
for (const cw of [0, 0.5]) {
  const D = task.described.map((i) => inp(i, cw));
  const sims = task.withheld.map((i) => { const q = inp(i, cw); return D.map((d) => dot(q, d)); });
  for (const K of [10, 30]) for (const tau of [0.02, 0.05]) {
    const knn = sims.map((s) => {
      const top = topK(s, K);
      const m = s[top[0]!]!;
      const out = new Float32Array(100);
      for (const j of top) { const w = Math.exp((s[j]! - m) / tau); const t = data.text[task.described[j]!]!; for (let k = 0; k < 100; k++) out[k]! += w * (t[k]! - meanT[k]!); }
      return l2NormaliseInPlace(out);
    });
    report(`knn cw${cw} K${K} tau${tau} alone`, knn);
    for (const b of [0.5, 1]) report(`  map + ${b} knn`, mapped.map((m, r) => l2NormaliseInPlace(m.map((x, k) => x + b * knn[r]![k]!))));
  }
}
await te.close();
