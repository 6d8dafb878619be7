// Issue 12: query expansion (alpha-QE, as in image retrieval): a query's visual vector is moved to
// the weighted mean of itself and its k nearest mapped photos, then asked again. For
// recommendations (every product a subject) and for "<type>" / "<colour>" searches. Rejected:
// recommendations 0.621 -> 0.626-0.632 (k 5-50), search measures within +-0.01, for a second
// vector search per request.
//   npx tsx bench/experiments/query-expansion.ts
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { dot, l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { recommendationVisual } from "../../src/search/visual-space.js";
import { queriesThrough, recommendationPrecision, topK } from "../eval.js";
import { data, f, report, task, te } from "./setup.js";

const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]!, descriptor: data.items[i]!.productDisplayName })));
const mapped = data.items.map((_, i) => map.apply(data.image[i]!, data.colour[i]!));
const described = new Set(task.described);

/** alpha-QE: q' = unit(w0 q + sum over the k nearest of max(sim, 0)^alpha x). */
function expand(q: Float32Array, corpus: readonly Float32Array[], k: number, alpha: number, w0: number, exclude = -1): Float32Array {
  if (k === 0) return q;
  const sims = corpus.map((c) => dot(c, q));
  const out = q.map((x) => w0 * x);
  for (const j of topK(sims, k, exclude)) {
    const w = Math.max(sims[j]!, 0) ** alpha;
    for (let d = 0; d < out.length; d++) out[d]! += w * corpus[j]![d]!;
  }
  return l2NormaliseInPlace(out);
}

const queryMap = queriesThrough(map, te);
for (const [k, alpha, w0] of [[0, 1, 1], [5, 1, 1], [10, 1, 1], [10, 3, 1], [20, 3, 1], [10, 3, 0.5], [30, 3, 1], [50, 3, 1]] as const) {
  const subject = (i: number) => expand(described.has(i) ? recommendationVisual(mapped[i]!, data.text[i]!) : mapped[i]!, mapped, k, alpha, w0, i);
  const recs = recommendationPrecision(data.items, described, subject, mapped);
  // Searches expanded against the whole catalog (described photos included), measured on the withheld half.
  const queries = { encode: (text: string) => expand(queryMap.encode(text), mapped, k, alpha, w0) };
  report(`k ${String(k).padStart(2)} alpha ${alpha} w0 ${w0}`, task.withheld.map((i) => mapped[i]!), { queries, suffix: `  recs ${recs.map(f).join("/")}` });
}
await te.close();
