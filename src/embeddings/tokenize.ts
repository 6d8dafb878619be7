// Splits text into lower-case word tokens the way GloVe (Wikipedia + Gigaword, lower-cased) saw
// them, and maps tokens missing from its vocabulary onto ones it has, for the spellings product
// titles use: "tshirts" -> "t-shirts", "trackpants" -> "track" + "pants", "32GB" -> "32" + "gb",
// "Café" -> "cafe", "kurtas" -> "kurta".

export interface Vocabulary {
  /** Row (= frequency rank) of an exact word, or -1. */
  id(word: string): number;
}

/** Compound halves must be common words: rare ones would split brand names into noise. */
const COMPOUND_MAX_RANK = 30_000;

export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  const normalised = text.normalize("NFKC").toLowerCase().replace(/[\u2018\u2019\u02bc]/g, "'");
  for (const match of normalised.matchAll(/[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*/gu)) {
    // Possessives carry no meaning of their own ("men's" -> "men"); other apostrophes are dropped.
    const token = match[0].replace(/'s$/, "").replace(/'/g, "");
    if (token) tokens.push(token);
  }
  return tokens;
}

/** Vocabulary rows standing for one token: usually one, several for split compounds, none if unknown. */
export function tokenRows(token: string, vocab: Vocabulary): number[] {
  const known = lookup(token, vocab);
  if (known >= 0) return [known];
  if (token.includes("-")) {
    const joined = lookup(token.replace(/-/g, ""), vocab);
    if (joined >= 0) return [joined];
    return token.split("-").flatMap((part) => (part ? tokenRows(part, vocab) : []));
  }
  const pieces = token.split(/(?<=\p{N})(?=\p{L})|(?<=\p{L})(?=\p{N})/u);
  if (pieces.length > 1) return pieces.map((p) => lookup(p, vocab)).filter((r) => r >= 0);
  return splitCompound(token, vocab);
}

/** The word itself, else its spelling variants, in order of trust. */
function lookup(word: string, vocab: Vocabulary): number {
  for (const candidate of variants(word)) {
    const id = vocab.id(candidate);
    if (id >= 0) return id;
  }
  return -1;
}

function* variants(word: string): Generator<string> {
  yield word;
  const plain = word.normalize("NFD").replace(/\p{M}/gu, "");
  if (plain !== word) yield plain;
  // "tshirt", "ebook", "xray": GloVe knows the hyphenated spelling.
  if (plain.length >= 4 && /^\p{L}\p{L}/u.test(plain)) yield `${plain[0]}-${plain.slice(1)}`;
  // Plurals GloVe lacks; only ever tried after the word itself failed.
  if (plain.length > 3 && plain.endsWith("s") && !plain.endsWith("ss")) {
    const singular = plain.endsWith("ies") ? `${plain.slice(0, -3)}y` : plain.slice(0, -1);
    yield singular;
    if (plain.endsWith("es")) yield plain.slice(0, -2);
    if (singular.length >= 4) yield `${singular[0]}-${singular.slice(1)}`;
  }
}

function splitCompound(token: string, vocab: Vocabulary): number[] {
  if (token.length < 6 || !/^\p{L}+$/u.test(token)) return [];
  let best: [number, number] | undefined;
  for (let i = 3; i <= token.length - 3; i++) {
    const left = vocab.id(token.slice(0, i));
    const right = lookup(token.slice(i), vocab);
    if (left < 0 || right < 0 || left >= COMPOUND_MAX_RANK || right >= COMPOUND_MAX_RANK) continue;
    if (!best || Math.max(left, right) < Math.max(best[0], best[1])) best = [left, right];
  }
  return best ?? [];
}
