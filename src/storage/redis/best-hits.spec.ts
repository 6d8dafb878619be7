import { describe, expect, it } from "vitest";
import { BestHits, byCosine } from "./best-hits.js";
import type { IndexHit } from "../../search/index.js";

const hit = (productId: string, cosine: number): IndexHit => ({ productId, cosine, attributes: {} });

describe("BestHits", () => {
  it("keeps the count best of those offered, in the order a full sort gives, ties by id", () => {
    // Many equal cosines: the cut must fall where the full sort's does.
    const offered = Array.from({ length: 2000 }, (_, i) => hit(`p${(i * 7919) % 2000}`, Math.round(Math.sin(i) * 50) / 50));
    for (const count of [0, 1, 20, 333, 1999, 2000, 5000]) {
      const best = new BestHits(count);
      for (const h of offered) if (best.wants(h.productId, h.cosine)) best.keep(h);
      expect(best.hits()).toEqual([...offered].sort(byCosine).slice(0, count));
      expect(best.all).toBe(offered.length <= count);
    }
  });
});
