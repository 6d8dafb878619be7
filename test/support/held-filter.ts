// A filter past the candidates read on a first ask, asked three times by one index instance with a
// holder cache: the first answer comes from HNSW, the next two exactly from its candidates (read,
// then held; candidate-sets.ts).
import { expect } from "vitest";
import type { IndexAnswer } from "../../src/search/index.js";

export async function expectHeldFromSecondAsk(ask: () => Promise<IndexAnswer>, best: readonly string[]): Promise<void> {
  const first = await ask();
  expect(first.kind === "ok" && first.exact).toBe(false);
  for (let k = 0; k < 2; k++) {
    const answer = await ask();
    if (answer.kind !== "ok") throw new Error(answer.kind);
    expect(answer.exact).toBe(true);
    expect(answer.hits.map((h) => h.productId)).toEqual(best);
  }
}
