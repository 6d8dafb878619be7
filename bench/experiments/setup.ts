// What the issue-12 experiments share: fashion-dev loaded with its cached encodings, the
// described/withheld split of bench/eval.ts, and one line of figures per variant.
import { join } from "node:path";
import { byColour, byType, colourPrecision, loadDataset, scoreTextImage, selfPrecisionAtK, textImageTask } from "../eval.js";
import type { QueryEncoder } from "../eval.js";

const dir = join(import.meta.dirname, "..", "..", "..", "shared", "eval", "fashion-dev");
export const data = await loadDataset(dir, undefined, console.error);
export const task = textImageTask(data.items);
export const te = data.textEncoder;
export const f = (x: number) => x.toFixed(3);

/**
 * Zero-shot F1, "<type>" and "<colour>" P@10 and photo-to-photo P@10 of the withheld photos placed at
 * `vecs`, queries encoded by `queries` (the word vectors by default), and `suffix` after them.
 */
export function report(name: string, vecs: Float32Array[], options: { colourType?: boolean; queries?: QueryEncoder; suffix?: string } = {}): void {
  const queries = options.queries ?? te;
  const s = scoreTextImage(task, queries, vecs);
  const col = colourPrecision(task, queries, vecs).p10;
  const rec = selfPrecisionAtK(vecs, task.withheldItems, [byType, byColour]);
  const colourType = options.colourType ? ` c+t ${s.colourTypeP10.map(f).join(" ")}` : "";
  console.log(`${name.padEnd(50)} F1 ${f(s.f1["one-item"])} type ${f(s.typeP10)} colour ${f(col)}${colourType} rec ${f(rec[0]!)} recCol ${f(rec[1]!)}${options.suffix ?? ""}`);
}
