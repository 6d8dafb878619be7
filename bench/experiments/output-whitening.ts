// Issue 12, rejected: whitening the map's outputs by the covariance of the catalog's own mapped
// photos ((C + r I)^-p, against hubness: a regression's outputs crowd together). On fashion-dev every
// setting tried (r 0.1-3 x mean variance, p 1/2 and 1/4, centred or not) lost F1 (0.551-0.620
// against 0.623) and recommendations (0.465-0.499 against 0.504).
//   npx tsx bench/experiments/output-whitening.ts
import { join } from "node:path";
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { loadDataset, textImageTask, scoreTextImage, selfPrecisionAtK, byType, byColour, colourPrecision } from "../eval.js";
const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
const data = await loadDataset(dir, undefined, console.error);
const task = textImageTask(data.items);
const f = (x: number) => x.toFixed(3);
const te = data.textEncoder;
function report(name: string, vecs: Float32Array[]) {
  const s = scoreTextImage(task, te, vecs);
  const rec = selfPrecisionAtK(vecs, task.withheldItems, [byType, byColour]);
  console.log(`${name.padEnd(50)} F1 ${f(s.f1["one-item"])} type ${f(s.typeP10)} colour ${f(colourPrecision(task, te, vecs).p10)} rec ${f(rec[0]!)} recCol ${f(rec[1]!)}`);
}
const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const all = data.items.map((_, i) => map.apply(data.image[i]!, data.colour[i]!));
const mapped = task.withheld.map((i) => all[i]!);
report("map", mapped);
const k = 100;
// covariance of all the catalog's mapped photos
const mean = new Float64Array(k);
for (const v of all) for (let t = 0; t < k; t++) mean[t]! += v[t]! / all.length;
const cov = new Float64Array(k * k);
for (const v of all) for (let a = 0; a < k; a++) for (let b = 0; b < k; b++) cov[a * k + b]! += (v[a]! - mean[a]!) * (v[b]! - mean[b]!) / all.length;
let tr = 0; for (let t = 0; t < k; t++) tr += cov[t * k + t]!;
// symmetric inverse square root via eigen: use power: simple Jacobi
function eig(m: Float64Array, n: number) {
  const a = Float64Array.from(m), v = new Float64Array(n * n); for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 30; sweep++) { let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) { const apq = a[p * n + q]!; off += apq * apq; if (Math.abs(apq) < 1e-14) continue;
      const th = (a[q * n + q]! - a[p * n + p]!) / (2 * apq); const t = Math.sign(th || 1) / (Math.abs(th) + Math.sqrt(th * th + 1)); const c = 1 / Math.sqrt(t * t + 1), s = t * c;
      for (let r = 0; r < n; r++) { const arp = a[r * n + p]!, arq = a[r * n + q]!; a[r * n + p] = c * arp - s * arq; a[r * n + q] = s * arp + c * arq; }
      for (let r = 0; r < n; r++) { const apr = a[p * n + r]!, aqr = a[q * n + r]!; a[p * n + r] = c * apr - s * aqr; a[q * n + r] = s * apr + c * aqr; }
      for (let r = 0; r < n; r++) { const vrp = v[r * n + p]!, vrq = v[r * n + q]!; v[r * n + p] = c * vrp - s * vrq; v[r * n + q] = s * vrp + c * vrq; } }
    if (off < 1e-20) break; }
  return { values: Array.from({ length: n }, (_, i) => a[i * n + i]!), vectors: v };
}
const { values, vectors } = eig(cov, k);
for (const center of [false, true]) for (const reg of [0.1, 0.3, 1, 3]) for (const power of [0.5, 0.25]) {
  const r = reg * tr / k;
  const T = new Float64Array(k * k);
  for (let a = 0; a < k; a++) for (let b = 0; b < k; b++) { let s = 0; for (let e = 0; e < k; e++) s += vectors[a * k + e]! * vectors[b * k + e]! * Math.pow(values[e]! + r, -power); T[a * k + b] = s; }
  const out = mapped.map((v) => { const w = new Float32Array(k); for (let a = 0; a < k; a++) { let s = 0; for (let b = 0; b < k; b++) s += T[a * k + b]! * (v[b]! - (center ? mean[b]! : 0)); w[a] = s; } return l2NormaliseInPlace(w); });
  report(`whiten outputs reg ${reg} pow ${power}${center ? " centred" : ""}`, out);
}
await te.close();
