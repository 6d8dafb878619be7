// Issue 12: how far these image features can go at all. The service never knows a product's type
// or colour; this oracle does: the map's own recipe (ridge + kernel ridge on the photo features and
// colour profile; also the linear step alone) fitted on the described half to the *true* article
// type or base colour (one-hot) instead of the title vector, measured on the withheld half as the
// issue's measures are. A model trained on the answers bounds what a zero-shot one on the same
// features can reach.
//   npx tsx bench/experiments/supervised-ceiling.ts [--image-model mobilenet+inception]
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fitTextImageMap } from "../../src/embeddings/index.js";
import type { FitTextImageMapOptions, ImageModel } from "../../src/embeddings/index.js";
import { dot } from "../../src/embeddings/vector-math.js";
import { argmax, byType, loadDataset, selfPrecisionAtK, textImageTask, topK } from "../eval.js";
import { weightedF1 } from "../eval-service.js";

const { values } = parseArgs({ options: { "image-model": { type: "string", default: "mobilenet" }, sweep: { type: "boolean", default: false } } });
const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
const data = await loadDataset(dir, undefined, console.error, 1, values["image-model"] as ImageModel);
const task = textImageTask(data.items);
const f = (x: number) => x.toFixed(3);
type Label = (i: number) => string;
const typeOf: Label = (i) => data.items[i]!.articleType;
const colourOf: Label = (i) => data.items[i]!.baseColour;

/**
 * The oracle for one label: outputs in the one-hot space itself (no whitening, mean kept), so output
 * k is label k's score. One order of the labels for every fold (the 100 most common of the catalog),
 * so that photos placed by different folds are comparable.
 */
function oracle(train: readonly number[], label: Label, options: FitTextImageMapOptions): { place: (i: number) => Float32Array; classes: string[] } {
  const counts = new Map<string, number>();
  for (let i = 0; i < data.items.length; i++) counts.set(label(i), (counts.get(label(i)) ?? 0) + 1);
  const classes = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 100).map(([c]) => c);
  const samples = train.map((i) => {
    const text = new Float32Array(100);
    const k = classes.indexOf(label(i));
    if (k >= 0) text[k] = 1;
    return { image: data.image[i]!, colour: data.colour[i]!, text };
  });
  const map = fitTextImageMap(samples, { whitening: false, removeMeanDirection: false, ...options });
  return { place: (i) => map.apply(data.image[i]!, data.colour[i]!), classes };
}

/** P@10 of ranking the withheld products by their score for each label value with 10+ of them. */
function queryP10(place: (i: number) => Float32Array, classes: string[], label: Label): number {
  const withheld = task.withheld.map(place);
  const counts = new Map<string, number>();
  for (const i of task.withheld) counts.set(label(i), (counts.get(label(i)) ?? 0) + 1);
  const wanted = [...counts].filter(([, n]) => n >= 10).map(([c]) => c);
  let sum = 0;
  for (const c of wanted) {
    const k = classes.indexOf(c);
    const top = topK(withheld.map((v) => (k >= 0 ? v[k]! : 0)), 10);
    sum += top.filter((r) => label(task.withheld[r]!) === c).length / 10;
  }
  return sum / wanted.length;
}

// --sweep: other kernel settings of the oracle, so that the ceiling is not one weak setting's.
const settings: [string, FitTextImageMapOptions][] = [["linear ridge", { kernel: false }], ["ridge + kernel ridge (the map's recipe)", {}]];
if (values.sweep) {
  for (const bandwidth of [1, 2, 4]) for (const lambda of [0.1, 0.5]) for (const landmarks of [1000, 2000]) {
    settings.push([`kernel bw ${bandwidth} lambda ${lambda} landmarks ${landmarks}`, { kernel: { landmarks, bandwidth, colourWeight: 0.5, lambda } }]);
  }
}
for (const [name, options] of settings) {
  const byTypeOracle = oracle(task.described, typeOf, options);
  const withheld = task.withheld.map(byTypeOracle.place);
  const truth = task.classified.map((r) => task.withheldItems[r]!.articleType);
  const predicted = task.classified.map((r) => task.types[argmax(task.types.map((t) => withheld[r]![byTypeOracle.classes.indexOf(t)] ?? 0))]!);
  const p2p = selfPrecisionAtK(withheld, task.withheldItems, [byType])[0]!;
  // Recommendations over the whole catalog, every photo placed by an oracle that never saw it (two
  // folds: fitted on the even half for the odd, on the odd half for the even).
  const out: Float32Array[] = [];
  for (const [train, test] of [[task.described, task.withheld], [task.withheld, task.described]] as const) {
    const fold = oracle(train, typeOf, options);
    for (const i of test) out[i] = fold.place(i);
  }
  let recs = 0;
  for (let i = 0; i < out.length; i++) {
    const top = topK(out.map((c) => dot(c, out[i]!)), 10, i);
    recs += top.filter((j) => typeOf(j) === typeOf(i)).length / 10 / out.length;
  }
  const byColourOracle = oracle(task.described, colourOf, options);
  console.log(
    `oracle, ${name.padEnd(40)} type F1 ${f(weightedF1(truth, predicted))}  "<type>" P@10 ${f(queryP10(byTypeOracle.place, byTypeOracle.classes, typeOf))}` +
      `  "<colour>" P@10 ${f(queryP10(byColourOracle.place, byColourOracle.classes, colourOf))}  photo-to-photo by type ${f(p2p)}  recommendations ${f(recs)}`,
  );
}
await data.textEncoder.close();
