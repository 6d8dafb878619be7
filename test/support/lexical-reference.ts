// The documented lexical similarity (README: "Search and recommendations"), computed here by brute
// force over every word of every product, independently of the service's radix-tree lookups and of
// Redis: plain Levenshtein distance, plain prefix tests.
import { lexicalWords } from "../../src/search/index.js";

const NO_MATCH = -1;

export function levenshtein(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const row = [i];
    for (let j = 1; j <= y.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[y.length]!;
}

/** Each product's lexical similarity to the query (-1: no match), given every indexed product's descriptor. */
export function lexicalReference(query: string, descriptors: ReadonlyMap<string, string>): Map<string, number> {
  const queryWords = lexicalWords(query).slice(0, 16);
  const wordsOf = new Map([...descriptors].map(([id, d]) => [id, lexicalWords(d)]));
  const vocabulary = [...new Set([...wordsOf.values()].flat())];
  const perWord = queryWords.map((q, i) => {
    const letters = [...q].length;
    const edits = letters >= 8 ? 2 : letters >= 4 ? 1 : 0;
    const matches = new Map<string, number>();
    for (const d of vocabulary) {
      const distance = levenshtein(q, d);
      if (distance <= edits) matches.set(d, 1 - 0.2 * distance);
    }
    if (i === queryWords.length - 1 && letters >= 3) {
      const longer = vocabulary
        .filter((d) => d !== q && d.startsWith(q))
        .sort((a, b) => a.length - b.length || (a < b ? -1 : 1))
        .slice(0, 64);
      for (const d of longer) matches.set(d, Math.max(matches.get(d) ?? 0, (1 + letters / [...d].length) / 2));
    }
    return matches;
  });
  const out = new Map<string, number>();
  for (const [id, words] of wordsOf) {
    const matched = words.filter((d) => perWord.some((m) => m.has(d)));
    if (queryWords.length === 0 || matched.length === 0) {
      out.set(id, NO_MATCH);
      continue;
    }
    if (words.length === queryWords.length && words.every((d, i) => d === queryWords[i])) {
      out.set(id, 1);
      continue;
    }
    const best = perWord.map((m) => Math.max(0, ...words.map((d) => m.get(d) ?? 0)));
    out.set(id, 0.8 * ((0.9 * best.reduce((a, b) => a + b, 0)) / queryWords.length + (0.1 * matched.length) / words.length));
  }
  return out;
}
