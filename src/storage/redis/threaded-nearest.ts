// VSIM sent on its own, outside the query script. Inside a script a VSIM runs on Redis's main
// thread, which then serves nothing else for its whole search (about 1 ms at 100k): one Redis
// answered at most one main thread's worth of searches. Sent on its own, Redis runs VSIM on a
// thread of its own and its main thread goes on serving the other clients (README "HNSW off Redis's
// main thread"). A client waiting for a VSIM is blocked, commands sent after it on the same
// connection wait too, so these connections carry only searches (each its VSIM and what must run
// just before it), and there are several.
import type { RedisClient } from "./connection.js";

/** The nearest elements, with the build of the catalog's index before and after they were found. */
export interface ThreadedNearest {
  /** The meta hash's `lex` (the build) read just before the VSIM, and just after ("" for none). */
  buildBefore: string;
  buildAfter: string;
  ids: string[];
  /** VSIM's scores, (1 + cosine) / 2, best first. */
  scores: number[];
  /** The reply of the command sent ahead of them, if any. */
  first: unknown;
}

/** A script (as ioredis's defineCommand takes it) that a query sends ahead of its VSIM. */
export interface ScriptDefinition {
  numberOfKeys: number;
  lua: string;
}

export class ThreadedVsim {
  private next = 0;

  /** `scripts`: defined on every connection, to be sent ahead of a VSIM (nearest's `first`). */
  constructor(
    private readonly connections: readonly RedisClient[],
    scripts: Record<string, ScriptDefinition> = {},
  ) {
    for (const connection of connections) for (const [name, definition] of Object.entries(scripts)) connection.defineCommand(name, definition);
  }

  get available(): boolean {
    return this.connections.length > 0;
  }

  /**
   * HNSW's `count` nearest elements of the set at `vectorsKey`, searched `ef` deep, in one round
   * trip after `first` (a command of `scripts`, e.g. "<name>Buffer", and its arguments), which
   * Redis runs on its main thread before the VSIM. The build is read just before the VSIM and just
   * after it: a rebuild committed between them (it renames a new set onto the key and names a new
   * build) shows as two different builds.
   */
  async nearest(vectorsKey: string, metaKey: string, vector: Buffer, count: number, ef: number, first?: { command: string; args: (string | Buffer)[] }): Promise<ThreadedNearest> {
    const connection = this.connections[this.next++ % this.connections.length]!;
    const pipeline = connection.pipeline();
    if (first) (pipeline as unknown as Record<string, (...args: (string | Buffer)[]) => unknown>)[first.command]!(...first.args);
    pipeline
      .hget(metaKey, "lex")
      .call("VSIM", vectorsKey, "FP32", vector, "WITHSCORES", "COUNT", String(count), "EF", String(ef))
      .hget(metaKey, "lex");
    const results = await pipeline.exec();
    for (const [error] of results ?? []) if (error) throw error;
    const values = results!.map(([, value]) => value);
    const [before, found, after] = values.slice(first ? 1 : 0) as [string | null, string[] | null, string | null];
    const ids: string[] = [];
    const scores: number[] = [];
    for (let k = 0; k + 1 < (found?.length ?? 0); k += 2) {
      ids.push(String(found![k]));
      scores.push(Number(found![k + 1]));
    }
    return { buildBefore: before ?? "", buildAfter: after ?? "", ids, scores, first: first ? values[0] : undefined };
  }
}

/** Tags this process remembers the facts of; past it, it starts again (a lookup costs a query its threaded VSIM once). */
const TAGS_KEPT = 4096;
/** Common words remembered of one tag; past it, its set starts again. */
const WORDS_KEPT = 4096;

/**
 * What the answers of each tag's queries said of it: how many elements it has (a set scanned
 * exactly is not asked of HNSW) and which words are common there (a query with one asks for more
 * nearest elements: QUERY_SCRIPT's widening).
 */
export class TagFacts {
  private readonly sizes = new Map<string, number>();
  private readonly common = new Map<string, Set<string>>();

  size(tag: string): number | undefined {
    return this.sizes.get(tag);
  }

  hasCommon(tag: string, words: readonly string[]): boolean {
    const known = this.common.get(tag);
    return known !== undefined && words.some((word) => known.has(word));
  }

  learn(tag: string, size: number, commonWords: readonly string[]): void {
    if (this.sizes.size >= TAGS_KEPT && !this.sizes.has(tag)) this.sizes.clear();
    this.sizes.set(tag, size);
    if (commonWords.length === 0) return;
    let known = this.common.get(tag);
    if (!known || known.size + commonWords.length > WORDS_KEPT) {
      if (this.common.size >= TAGS_KEPT) this.common.clear();
      this.common.set(tag, (known = new Set()));
    }
    for (const word of commonWords) known.add(word);
  }
}
