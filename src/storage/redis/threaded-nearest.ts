// VSIM sent on its own, outside the query script. Inside a script a VSIM runs on Redis's main
// thread, which then serves nothing else for its whole search (about 1 ms at 100k): one Redis
// answered at most one main thread's worth of searches. Sent on its own, Redis runs VSIM on a
// thread of its own and its main thread goes on serving the other clients (README "HNSW off Redis's
// main thread"). A client waiting for a VSIM is blocked, commands sent after it on the same
// connection wait too, so these connections carry only searches (each its VSIM and what must run
// just before it), and there are several.
import type { RedisClient } from "./connection.js";

/** The nearest elements, and the build they were searched in when no command went ahead of them. */
export interface ThreadedNearest {
  /**
   * The meta hash's `lex` read just before the VSIM ("" for none), when nothing was sent ahead of
   * it; a command sent ahead checks the build itself. Either is the build the VSIM searched unless
   * a rebuild committed since, which a later look at `lex` shows (builds are never named twice).
   */
  build: string | undefined;
  ids: string[];
  /** VSIM's scores, (1 + cosine) / 2, best first. */
  scores: number[];
  /** The reply of the command sent ahead of them, if any. */
  first: unknown;
  /** The reply of the command sent after them, if any. */
  after: unknown;
}

/** What a VSIM asks: as QUERY_SCRIPT would for the same query. */
export interface NearestSearch {
  count: number;
  /** HNSW's depth, or undefined for an exact scan (TRUTH). */
  ef: number | undefined;
  /** A FILTER expression (filter-expression.ts) and its FILTER-EF. */
  filter?: { expression: string; ef: number } | undefined;
}

/** A command of `scripts` (e.g. "<name>Buffer") and its arguments. */
export interface ScriptCall {
  command: string;
  args: (string | Buffer)[];
}

/** What a query sends on the VSIM's connection besides it, and where. */
export interface NearestCalls {
  /** Run on Redis's main thread before the VSIM; without one, a read of the build is. */
  first?: ScriptCall | undefined;
  /**
   * Run on Redis's main thread once the VSIM is done: the connection's later commands wait for it,
   * so this sees what the VSIM saw or later, in the same round trip.
   */
  after?: ScriptCall | undefined;
  /**
   * A long scan no search waits for, sent on the last connection, which searches leave alone
   * meanwhile (while there are others): a search sent after it there would wait the whole scan.
   */
  aside?: boolean;
}

/** A script (as ioredis's defineCommand takes it) that a query sends with its VSIM. */
export interface ScriptDefinition {
  numberOfKeys: number;
  lua: string;
}

export class ThreadedVsim {
  private next = 0;
  /** Long scans sent aside (nearest's `aside`) on the last connection, still running. */
  private aside = 0;

  /** `scripts`: defined on every connection, to be sent with a VSIM (nearest's `calls`). */
  constructor(
    private readonly connections: readonly RedisClient[],
    scripts: Record<string, ScriptDefinition> = {},
  ) {
    for (const connection of connections) for (const [name, definition] of Object.entries(scripts)) connection.defineCommand(name, definition);
  }

  get available(): boolean {
    return this.connections.length > 0;
  }

  /** The `search.count` nearest elements of the set at `vectorsKey`, with `calls`, in one round trip. */
  async nearest(vectorsKey: string, metaKey: string, vector: Buffer, search: NearestSearch, calls: NearestCalls = {}): Promise<ThreadedNearest> {
    const last = this.connections.length - 1;
    const shared = this.aside > 0 && last > 0 ? last : this.connections.length;
    const aside = calls.aside === true;
    const connection = this.connections[aside ? last : this.next++ % shared]!;
    if (aside) this.aside++;
    try {
      return await this.ask(connection, vectorsKey, metaKey, vector, search, calls);
    } finally {
      if (aside) this.aside--;
    }
  }

  private async ask(
    connection: RedisClient,
    vectorsKey: string,
    metaKey: string,
    vector: Buffer,
    search: NearestSearch,
    { first, after }: NearestCalls,
  ): Promise<ThreadedNearest> {
    const pipeline = connection.pipeline();
    const send = (call: ScriptCall) => (pipeline as unknown as Record<string, (...args: (string | Buffer)[]) => unknown>)[call.command]!(...call.args);
    if (first) send(first);
    else pipeline.hget(metaKey, "lex");
    // In QUERY_SCRIPT's order, so that both ask Redis the same.
    pipeline.call(
      "VSIM",
      vectorsKey,
      "FP32",
      vector,
      "WITHSCORES",
      "COUNT",
      String(search.count),
      ...(search.ef === undefined ? ["TRUTH"] : ["EF", String(search.ef)]),
      ...(search.filter ? ["FILTER", search.filter.expression, "FILTER-EF", String(search.filter.ef)] : []),
    );
    if (after) send(after);
    const results = await pipeline.exec();
    for (const [error] of results ?? []) if (error) throw error;
    const [ahead, found, behind] = results!.map(([, value]) => value) as [unknown, string[] | null, unknown];
    const ids: string[] = [];
    const scores: number[] = [];
    for (let k = 0; k + 1 < (found?.length ?? 0); k += 2) {
      ids.push(String(found![k]));
      scores.push(Number(found![k + 1]));
    }
    return first
      ? { build: undefined, ids, scores, first: ahead, after: behind }
      : { build: (ahead as string | null) ?? "", ids, scores, first: undefined, after: behind };
  }
}

/** Tags this process remembers the facts of; past it, it starts again (a lookup costs a query its threaded VSIM once). */
const TAGS_KEPT = 4096;
/** Common words remembered of one tag; past it, its set starts again. */
const WORDS_KEPT = 4096;

/**
 * What the answers of each tag's queries said of it: how many elements it has (a set scanned
 * exactly is not asked of HNSW), which words are common there (a query with one asks for more
 * nearest elements: QUERY_SCRIPT's widening), and whether its build keeps field postings (its
 * filtered queries are then the script's).
 */
export class TagFacts {
  private readonly sizes = new Map<string, number>();
  private readonly common = new Map<string, Set<string>>();
  private readonly postings = new Set<string>();

  hasPostings(tag: string): boolean {
    return this.postings.has(tag);
  }

  notePostings(tag: string): void {
    if (this.postings.size >= TAGS_KEPT) this.postings.clear();
    this.postings.add(tag);
  }

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
