// Each process keeps the vocabularies of the catalogs it searches, to expand a query's words
// (fuzzy, prefix) before the one round trip that queries the index. The index checks on every query
// that the vocabulary used is its current one (same build, same length of the append-only word
// list); when it is not, the process reads what was added (or the whole list after a rebuild) and
// expands again. So a word any process adds is matched by every process's very next query.
import { LexicalVocabulary } from "./lexical.js";
import type { VectorIndex } from "./ports.js";

/** Catalog vocabularies kept; the least recently refreshed goes first. */
const MAX_CATALOGS = 256;

export class Vocabularies {
  private readonly byCatalog = new Map<string, LexicalVocabulary>();
  /** One read per catalog at a time: the list offset must match what was added exactly. */
  private readonly reading = new Map<string, Promise<LexicalVocabulary | undefined>>();

  constructor(private readonly index: VectorIndex) {}

  /** The catalog's vocabulary as last read; undefined when its index has none (yet). */
  async get(catalogId: string): Promise<LexicalVocabulary | undefined> {
    return this.byCatalog.get(catalogId) ?? this.refresh(catalogId);
  }

  /** Reads what the index added since this process last looked. */
  async refresh(catalogId: string): Promise<LexicalVocabulary | undefined> {
    const pending = this.reading.get(catalogId);
    if (pending) return pending;
    const read = this.read(catalogId).finally(() => this.reading.delete(catalogId));
    this.reading.set(catalogId, read);
    return read;
  }

  private async read(catalogId: string): Promise<LexicalVocabulary | undefined> {
    const known = this.byCatalog.get(catalogId);
    const read = await this.index.vocabulary(catalogId, known && { build: known.build, size: known.size });
    this.byCatalog.delete(catalogId);
    if (read.build === undefined) return undefined;
    const vocabulary = read.whole || !known ? new LexicalVocabulary(read.build) : known;
    vocabulary.add(read.words, read.build);
    if (this.byCatalog.size >= MAX_CATALOGS) this.byCatalog.delete(this.byCatalog.keys().next().value!);
    this.byCatalog.set(catalogId, vocabulary);
    return vocabulary;
  }
}
