// Issue 12: how far these image features can go at all. The service never knows a product's type
// or colour; this oracle does: the map's own recipe (ridge + kernel ridge on the photo features and
// colour profile; also the linear step alone) fitted on the described half to the *true* article
// type or base colour (one-hot) instead of the title vector, measured on the withheld half as the
// issue's measures are. A model trained on the answers bounds what a zero-shot one on the same
// features can reach.
//   npx tsx bench/experiments/supervised-ceiling.ts [--image-model mobilenet+inception]
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { FitTextImageMapOptions, ImageModel } from "../../src/embeddings/index.js";
import { argmax, byType, loadDataset, recommendationPrecision, selfPrecisionAtK, textImageTask } from "../eval.js";
import { weightedF1 } from "../eval-service.js";
import { fitOracle, labelP10 } from "./oracle.js";
import type { Label } from "./oracle.js";

const { values } = parseArgs({ options: { "image-model": { type: "string", default: "mobilenet" }, sweep: { type: "boolean", default: false } } });
const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
const data = await loadDataset(dir, undefined, console.error, 1, values["image-model"] as ImageModel);
const task = textImageTask(data.items);
const f = (x: number) => x.toFixed(3);
const typeOf: Label = (i) => data.items[i]!.articleType;
const colourOf: Label = (i) => data.items[i]!.baseColour;
const inputs = { count: data.items.length, image: (i: number) => data.image[i]!, colour: (i: number) => data.colour[i]! };

// --sweep: other kernel settings of the oracle, so that the ceiling is not one weak setting's.
const settings: [string, FitTextImageMapOptions][] = [["linear ridge", { kernel: false }], ["ridge + kernel ridge (the map's recipe)", {}]];
if (values.sweep) {
  for (const bandwidth of [1, 2, 4]) for (const lambda of [0.1, 0.5]) for (const landmarks of [1000, 2000]) {
    settings.push([`kernel bw ${bandwidth} lambda ${lambda} landmarks ${landmarks}`, { kernel: { landmarks, bandwidth, colourWeight: 0.5, lambda } }]);
  }
}
for (const [name, options] of settings) {
  const byTypeOracle = fitOracle(inputs, task.described, typeOf, options);
  const withheld = task.withheld.map(byTypeOracle.place);
  const truth = task.classified.map((r) => task.withheldItems[r]!.articleType);
  const predicted = task.classified.map((r) => task.types[argmax(task.types.map((t) => withheld[r]![byTypeOracle.classes.indexOf(t)] ?? 0))]!);
  const p2p = selfPrecisionAtK(withheld, task.withheldItems, [byType])[0]!;
  // Recommendations over the whole catalog, every photo placed by an oracle that never saw it (two
  // folds: fitted on the even half for the odd, on the odd half for the even).
  const out: Float32Array[] = [];
  for (const [train, test] of [[task.described, task.withheld], [task.withheld, task.described]] as const) {
    const fold = fitOracle(inputs, train, typeOf, options);
    for (const i of test) out[i] = fold.place(i);
  }
  const recs = recommendationPrecision(data.items, new Set(task.described), (i) => out[i]!, out)[0];
  const byColourOracle = fitOracle(inputs, task.described, colourOf, options);
  console.log(
    `oracle, ${name.padEnd(40)} type F1 ${f(weightedF1(truth, predicted))}  "<type>" P@10 ${f(labelP10(byTypeOracle, task.withheld, typeOf))}` +
      `  "<colour>" P@10 ${f(labelP10(byColourOracle, task.withheld, colourOf))}  photo-to-photo by type ${f(p2p)}  recommendations ${f(recs)}`,
  );
}
await data.textEncoder.close();
