// Field postings must answer eq/in exactly as matchesFilters does: a product passes an eq/in
// filter exactly when it holds one of the filter's postings. Checked over generated attributes
// and filters (types mixed on purpose: "1" vs 1 vs true, arrays, nested values, long strings).
import { describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../catalogs/model.js";
import { matchesFilters, type MetadataFilter } from "./filters.js";
import { seededRandom } from "../../test/support/random.js";
import { attributeFacets, facetToken, filterFacetGroups } from "./filter-facets.js";

const SCALARS: (string | number | boolean)[] = ["1", 1, true, false, 0, -0, "", "a", "A", 'it\'s "q"\n', "x".repeat(200), "x".repeat(199) + "y", 2.5, 1e21, "赤"];
const FIELDS = ["f", "g", "a.b", "with space", "constructor", "__proto__"];

describe("field postings", () => {
  it("answer eq and in exactly as matchesFilters does", () => {
    const random = seededRandom(3);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    for (let round = 0; round < 3000; round++) {
      const attributes: JsonObject = {};
      for (const field of FIELDS) {
        const r = random();
        if (r < 0.3) continue;
        let value: JsonValue = pick(SCALARS);
        if (r > 0.8) value = [pick(SCALARS), pick(SCALARS), [pick(SCALARS)], { k: pick(SCALARS) }, null];
        else if (r > 0.75) value = null;
        else if (r > 0.7) value = { nested: pick(SCALARS) };
        Object.defineProperty(attributes, field, { value, enumerable: true, writable: true, configurable: true });
      }
      const field = pick(FIELDS);
      const filter: MetadataFilter =
        random() < 0.5
          ? { field, operator: "eq", value: pick(SCALARS) }
          : { field, operator: "in", value: [pick(SCALARS), pick(SCALARS)].filter((v): v is string | number => typeof v !== "boolean") };
      if (filter.operator === "in" && filter.value.length === 0) continue;
      const held = new Set(attributeFacets(attributes));
      const [group] = filterFacetGroups([filter]);
      expect(group!.some((t) => held.has(t)), JSON.stringify({ attributes, filter })).toBe(matchesFilters([filter], attributes));
    }
  });

  it("give filters other than eq and in no group", () => {
    const filters: MetadataFilter[] = [
      { field: "f", operator: "ne", value: 1 },
      { field: "f", operator: "gt", value: 1 },
      { field: "f", operator: "nin", value: [1] },
      { field: "f", operator: "exists", value: true },
      { field: "f", operator: "eq", value: 1 },
    ];
    expect(filterFacetGroups(filters)).toEqual([[facetToken("f", 1)]]);
  });

  it("keep tokens short and free of newlines (the per-product list is newline-separated)", () => {
    for (const v of SCALARS) {
      const t = facetToken("field\nname", v);
      expect(t.length).toBeLessThanOrEqual(101);
      expect(t).not.toContain("\n");
    }
    expect(facetToken("f", "x".repeat(200))).not.toBe(facetToken("f", "x".repeat(199) + "y"));
  });
});
