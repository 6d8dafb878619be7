// Issue 12, rejected: the colour profile's own words (the map-less fallback, visual-space.ts)
// added to the map's output, for "<colour>" queries. On fashion-dev colour P@10 moves 0.458 ->
// 0.463-0.474 while F1 falls 0.623 -> 0.613 (weight 0.2) ... 0.506 (0.75).
//   npx tsx bench/experiments/colour-words.ts
import { fitTextImageMap } from "../../src/embeddings/index.js";
import { l2NormaliseInPlace } from "../../src/embeddings/vector-math.js";
import { colourWordSpace } from "../../src/search/visual-space.js";
import { data, report, task, te } from "./setup.js";
const map = fitTextImageMap(task.described.map((i) => ({ image: data.image[i]!, colour: data.colour[i]!, text: data.text[i]! })));
const mapped = task.withheld.map((i) => map.apply(data.image[i]!, data.colour[i]!));
const cw = colourWordSpace(te);
const cv = task.withheld.map((i) => cw.project(data.image[i]!, data.colour[i]!));
report("map", mapped, { colourType: true });
report("colour words alone", cv, { colourType: true });
for (const g of [0.2, 0.35, 0.5, 0.75]) report(`map + ${g} colour words`, mapped.map((m, r) => l2NormaliseInPlace(m.map((x, k) => x + g * cv[r]![k]!))), { colourType: true });
await te.close();
