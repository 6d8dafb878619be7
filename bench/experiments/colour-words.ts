// Issue 12, rejected: the colour profile's own words (the map-less fallback, visual-space.ts)
// added to the map's output, for "<colour>" queries. On fashion-dev colour P@10 moves 0.458 ->
// 0.463-0.474 while F1 falls 0.623 -> 0.613 (weight 0.2) ... 0.506 (0.75).
//   npx tsx bench/experiments/colour-words.ts
import { join } from "node:path";
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { colourWordSpace } from "../../src/search/visual-space.js";
import { loadDataset, textImageTask, scoreTextImage, selfPrecisionAtK, queryPrecisionAtK, byType, byColour } from "../eval.js";
const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
const data = await loadDataset(dir, undefined, console.error);
const task = textImageTask(data.items);
const f = (x: number) => x.toFixed(3);
const te = data.textEncoder;
const colours = [...new Set(task.withheldItems.map((i) => i.baseColour))].filter((c) => task.withheldItems.filter((i) => i.baseColour === c).length >= 10);
function report(name: string, vecs: Float32Array[]) {
  const s = scoreTextImage(task, te, vecs);
  const col = queryPrecisionAtK(colours.map((c) => ({ vector: te.encode(c.toLowerCase()), want: [c] })), vecs, task.withheldItems, [byColour])[0]!;
  const rec = selfPrecisionAtK(vecs, task.withheldItems, [byType, byColour]);
  console.log(`${name.padEnd(50)} F1 ${f(s.f1["one-item"])} type ${f(s.typeP10)} colour ${f(col)} c+t ${s.colourTypeP10.map(f).join(" ")} rec ${f(rec[0]!)} recCol ${f(rec[1]!)}`);
}
const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const mapped = task.withheld.map((i) => map.apply(data.image[i]!, data.colour[i]!));
const cw = colourWordSpace(te);
const cv = task.withheld.map((i) => cw.project(data.image[i]!, data.colour[i]!));
report("map", mapped);
report("colour words alone", cv);
for (const g of [0.2, 0.35, 0.5, 0.75]) report(`map + ${g} colour words`, mapped.map((m, r) => l2NormaliseInPlace(m.map((x, k) => x + g * cv[r]![k]!))));
await te.close();
