// Issue 12, kept (src/embeddings/word-prototypes.ts): a query's visual side as beta x its word
// vector + the unit sum of its words' prototypes (unit mean mapped photo of the described products
// whose titles use the word), for words seen >= 1 or >= 3 times. Measured here before it was built
// into the map: F1 0.662 (prototypes alone) / 0.667 (beta 0.5 and 1) against 0.623; "<type>" P@10
// 0.621-0.638 against 0.600; "<colour>" 0.463-0.489 against 0.458.
//   npx tsx bench/experiments/word-prototypes.ts
import { join } from "node:path";
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { tokenize } from "../../src/embeddings/tokenize.js";
import { loadDataset, textImageTask, byType, byColour, queryPrecisionAtK, typeQuery, argmax } from "../eval.js";
import { weightedF1 } from "../eval-service.js";
import { dot } from "../../src/embeddings/vector-math.js";
const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
const data = await loadDataset(dir, undefined, console.error);
const task = textImageTask(data.items);
const f = (x: number) => x.toFixed(3);
const te = data.textEncoder;
const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const all = data.items.map((_, i) => map.apply(data.image[i]!, data.colour[i]!));
const mapped = task.withheld.map((i) => all[i]!);
// word -> described products
const byWord = new Map<string, number[]>();
for (const i of task.described) for (const t of new Set(tokenize(data.items[i]!.productDisplayName))) { if (!byWord.has(t)) byWord.set(t, []); byWord.get(t)!.push(i); }
const colours = [...new Set(task.withheldItems.map((i) => i.baseColour))].filter((c) => task.withheldItems.filter((i) => i.baseColour === c).length >= 10);
function queryVec(q: string, beta: number, minCount: number): Float32Array {
  const base = te.encode(q);
  const out = new Float32Array(100);
  let any = false;
  for (const t of tokenize(q)) {
    const members = byWord.get(t);
    if (!members || members.length < minCount) continue;
    any = true;
    const p = new Float32Array(100);
    for (const i of members) for (let k = 0; k < 100; k++) p[k]! += all[i]![k]!;
    l2NormaliseInPlace(p);
    for (let k = 0; k < 100; k++) out[k]! += p[k]!;
  }
  if (!any) return base;
  l2NormaliseInPlace(out);
  return l2NormaliseInPlace(base.map((x, k) => beta * x + out[k]!));
}
for (const minCount of [1, 3]) for (const beta of [0, 0.5, 1, 100]) {
  const prompts = task.types.map((t) => queryVec(typeQuery(t), beta, minCount));
  const truth = task.classified.map((r) => task.withheldItems[r]!.articleType);
  const predicted = task.classified.map((r) => task.types[argmax(prompts.map((p) => dot(p, mapped[r]!)))]!);
  const typeP = queryPrecisionAtK(task.types.map((t, k) => ({ vector: prompts[k]!, want: [t] })), mapped, task.withheldItems, [byType])[0]!;
  const colP = queryPrecisionAtK(colours.map((c) => ({ vector: queryVec(c.toLowerCase(), beta, minCount), want: [c] })), mapped, task.withheldItems, [byColour])[0]!;
  console.log(`min ${minCount} beta ${beta}: F1 ${f(weightedF1(truth, predicted))} type ${f(typeP)} colour ${f(colP)}`);
}
await te.close();
