// The holders of a query's words as QUERY_SCRIPT named them (its "<id> <stamp>" lines, whether a
// common word has holders it did not read, the common words), held by this process as of their
// build's generation ("<build>:<count>", lexical-script.ts). A query whose words' holders are held
// as of the generation its nearest copies are (nearest-copies.ts) sends its VSIM and the nearest
// check alone (SlotIndex.queryThreaded): no script ahead of the VSIM on Redis's main thread. The
// check says whether the build took a write since; if it did, the held holders may be wrong and
// the query is asked again the usual way. So they are offered only for a catalog that has taken
// no write for QUIET_MS: during an import most would be stale by the time they are asked, each
// costing a second round trip.
import type { LexicalQuery } from "../../search/index.js";
import { parseGeneration } from "./generation.js";

/** What QUERY_SCRIPT named of a query's words' holders (asked for no nearest elements). */
export interface WordHolders {
  /** "<id> <stamp>" lines, newline-separated. */
  lines: string;
  /** A common word has holders not read. */
  more: boolean;
  /** The query's common words, looked for among its nearest elements. */
  commonWords: readonly string[];
}

/** What QUERY_SCRIPT's holders of a query depend on besides the build's contents, as a key. */
export function heldHoldersKey(lexical: LexicalQuery): string {
  const { vocabulary, maxProducts, commonWordProducts, commonProducts, words } = lexical;
  return [vocabulary.build, vocabulary.size, maxProducts, commonWordProducts, commonProducts, ...words].join("\n");
}

/** How long a tag's generation must have stood still before holders held as of it are offered. */
export const QUIET_MS = 1000;
/** Queries whose holders a process holds by default (about 60 bytes a holder line). */
export const HELD_QUERIES = 1024;
/** Characters of holder lines held by default: at most about 8 MB. */
export const HELD_CHARS = 8_000_000;
/** Tags whose generation is remembered; past it, they start again. */
const TAGS_KEPT = 4096;

interface Entry {
  generation: string;
  holders: WordHolders;
}

interface Seen {
  build: string;
  count: number;
  /** When this process first saw the tag at this generation (ms, its clock). */
  since: number;
}

/**
 * At most `entries` queries' holders and `chars` characters of their lines, the least recently
 * asked dropped first; each tag's latest generation seen and since when.
 */
export class HeldHolders {
  private readonly held = new Map<string, Entry>();
  private readonly seen = new Map<string, Seen>();
  private chars = 0;

  constructor(
    private readonly limits: { entries: number; chars: number },
    private readonly now: () => number = () => performance.now(),
  ) {}

  get enabled(): boolean {
    return this.limits.entries > 0;
  }

  /**
   * A generation an answer showed the tag at. An older one than already seen (answers of queries
   * sent before) changes nothing.
   */
  observe(tag: string, generation: string): void {
    if (!this.enabled) return;
    const at = parseGeneration(generation);
    if (!at) return;
    const seen = this.seen.get(tag);
    if (seen && seen.build === at.build && at.count <= seen.count) return;
    if (!seen && this.seen.size >= TAGS_KEPT) this.seen.clear();
    this.seen.set(tag, { ...at, since: this.now() });
  }

  /** The holders of `words` (a query's lexical arguments, as a key) held as of `generation`, if the tag has stood there for QUIET_MS. */
  get(tag: string, words: string, generation: string): WordHolders | undefined {
    const key = `${tag}\n${words}`;
    const entry = this.held.get(key);
    if (!entry) return undefined;
    const seen = this.seen.get(tag);
    if (entry.generation !== generation || !seen || `${seen.build}:${seen.count}` !== generation) {
      if (seen && entry.generation !== `${seen.build}:${seen.count}`) this.remove(key, entry);
      return undefined;
    }
    if (this.now() - seen.since < QUIET_MS) return undefined;
    this.held.delete(key);
    this.held.set(key, entry);
    return entry.holders;
  }

  /** Holds `holders` of `words` as read at `generation`, if that is the latest seen of the tag. */
  set(tag: string, words: string, generation: string, holders: WordHolders): void {
    if (!this.enabled || holders.lines.length > this.limits.chars) return;
    this.observe(tag, generation);
    const seen = this.seen.get(tag);
    if (!seen || `${seen.build}:${seen.count}` !== generation) return;
    const key = `${tag}\n${words}`;
    const had = this.held.get(key);
    if (had) this.remove(key, had);
    this.held.set(key, { generation, holders });
    this.chars += holders.lines.length;
    for (const [oldest, entry] of this.held) {
      if (this.held.size <= this.limits.entries && this.chars <= this.limits.chars) break;
      this.remove(oldest, entry);
    }
  }

  private remove(key: string, entry: Entry): void {
    this.held.delete(key);
    this.chars -= entry.holders.lines.length;
  }
}
