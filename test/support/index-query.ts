// An index query as a test of the vector index asks it: the searcher's fields, with the query's
// words (if any) matched against `vocabulary` and the vector's two halves standing for its visual
// and text parts.
import type { IndexQuery, MetadataFilter } from "../../src/search/index.js";

export function indexQuery(o: {
  vector: Float32Array;
  count: number;
  version: string;
  filters?: MetadataFilter[];
  words?: readonly string[];
  vocabulary?: { build: string; size: number };
}): IndexQuery {
  const { vector, count, version, words = [] } = o;
  const half = vector.length / 2;
  return {
    vector,
    count,
    filters: o.filters ?? [],
    exactUpTo: 0,
    expectedVersion: version,
    servableVersionPrefix: version,
    lexical:
      words.length > 0
        ? { vocabulary: o.vocabulary!, words, maxProducts: 128, commonWordProducts: count, commonProducts: count * words.length, visual: vector.slice(0, half), text: vector.slice(half) }
        : undefined,
  };
}
