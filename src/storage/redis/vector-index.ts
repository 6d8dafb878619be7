// The vector index the service uses. A catalog's index lives under its own hash tag (slot-index.ts),
// or, split into P parts, under P tags "<catalogId>~<generation>.<k>" that hash to different Redis
// Cluster slots, as Redis's documentation for vector sets advises past one node. A product lives in
// the part its id hashes to. A query goes to every part at once and the answers merge by score,
// exactly: each part answers its own best `count` (or more), and the best `count` overall are among
// them.
// The catalog's own tag then names the layout, so a rebuild into a new generation (any P) is
// written aside and switched to in one step; a reader still on the old parts finds them gone (their
// build version reads as missing) and asks the catalog's tag again.
import { createHash, randomBytes } from "node:crypto";
import type { RedisClient } from "./connection.js";
import { byCosine } from "./best-hits.js";
import { SlotIndex } from "./slot-index.js";
import type { NamedProducts, RedisVectorIndexOptions } from "./slot-index.js";
import type { FacetSource, IndexAnswer, IndexBuild, IndexEntry, IndexQuery, VectorIndex, VocabularyRead } from "../../search/index.js";

export type { RedisVectorIndexOptions } from "./slot-index.js";

/** Split catalogs whose layout this process remembers (one short string each). */
const LAYOUTS_KEPT = 4096;
/** Queries asked again of a catalog whose parts moved under them before the answer stands. */
const MOVED_RETRIES = 2;

interface Layout {
  /** "<generation>.<parts>", as the catalog's meta hash names it. */
  name: string;
  generation: string;
  tags: string[];
}

type OkAnswer = Extract<IndexAnswer, { kind: "ok" }>;

export class RedisVectorIndex implements VectorIndex {
  private readonly slots: SlotIndex;
  private readonly layouts = new Map<string, Layout>();

  private readonly facets: FacetSource | undefined;

  constructor(redis: RedisClient, options: RedisVectorIndexOptions) {
    this.slots = new SlotIndex(redis, options);
    this.facets = options.filterLearning ? options.facets : undefined;
  }

  async query(catalogId: string, query: IndexQuery): Promise<IndexAnswer> {
    let fresh = false;
    for (let attempt = 0; ; attempt++) {
      const layout = this.layouts.get(catalogId);
      const answer = layout
        ? await this.querySplit(catalogId, layout, query, fresh || attempt >= MOVED_RETRIES)
        : await this.slots.query(catalogId, query, 1, this.namedOf(catalogId));
      if (answer.kind === "split") {
        this.remember(catalogId, layoutOf(catalogId, answer.layout));
        fresh = true;
        continue;
      }
      if (answer.kind !== "moved") return answer;
      this.layouts.delete(catalogId);
      fresh = false;
    }
  }

  /**
   * Every part at once, merged. "moved": the layout remembered is not the catalog's any more (a part
   * is gone, or the vocabulary names other parts); `settled` answers it as it is instead.
   */
  private async querySplit(catalogId: string, layout: Layout, query: IndexQuery, settled: boolean): Promise<IndexAnswer | { kind: "moved" }> {
    const lexical = query.lexical;
    const vocabularies = lexical && partVocabularies(lexical.vocabulary.build, layout);
    if (lexical && !vocabularies) return settled ? { kind: "vocabulary" } : { kind: "moved" };
    const parts = layout.tags.length;
    const share = 1 / parts;
    const named = this.namedByPart(catalogId, parts);
    const ask = (k: number, exactUpTo = query.exactUpTo) =>
      this.slots.query(layout.tags[k]!, { ...query, exactUpTo, lexical: lexical && { ...lexical, vocabulary: vocabularies![k]! } }, share, named?.(k));
    const answers = await Promise.all(layout.tags.map((_, k) => ask(k)));
    const gone = answers.find((a) => a.kind === "split" || (a.kind === "stale" && a.version === undefined));
    if (gone) return settled ? { kind: "stale", version: undefined } : { kind: "moved" };
    const stale = answers.find((a) => a.kind === "stale");
    if (stale) return stale;
    if (answers.some((a) => a.kind === "vocabulary")) return { kind: "vocabulary" };
    const oks = answers as OkAnswer[];
    // A part that gave fewer hits than asked from an approximate filtered search may have stopped
    // early; the others' hits cannot stand in for its own, so it scans exactly.
    let scannedAfterShort = false;
    await Promise.all(
      oks.map(async (a, k) => {
        if (query.count > 0 && a.hits.length < query.count && !a.exact && !a.complete) {
          scannedAfterShort = true;
          const again = await ask(k, Infinity);
          if (again.kind !== "ok") throw new Error(`part ${k} of a split index answered ${again.kind} to its exact scan`);
          oks[k] = again;
        }
      }),
    );
    const complete = oks.every((a) => a.complete === true);
    const hits = oks.flatMap((a) => a.hits).sort(byCosine);
    // Each part gave every element it has above its last hit's cosine (all of them when complete,
    // or when fewer than asked came from an exact search): the merged hits down to the highest of
    // those floors are every element of the catalog above it. A part may give more than `count`
    // (post-filtered HNSW asks for enough that `count` pass), so this keeps them, and at least
    // `count` (each part's count-th is at most the merged count-th).
    let floor = -Infinity;
    for (const a of oks) if (!a.complete && !(a.exact && a.hits.length < query.count) && a.hits.length > 0) floor = Math.max(floor, a.hits[a.hits.length - 1]!.cosine);
    return {
      kind: "ok",
      size: oks.reduce((n, a) => n + a.size, 0),
      exact: oks.every((a) => a.exact),
      complete,
      current: oks.every((a) => a.current),
      hits: hits.filter((h) => h.cosine >= floor),
      lexical: oks.flatMap((a) => a.lexical),
      moreCommonHolders: oks.some((a) => a.moreCommonHolders),
      scannedAfterShort,
      scannedAsRare: oks.some((a) => a.scannedAsRare === true),
    };
  }

  /** What the catalogs' store names of a rare filter's products (options.facets), for a catalog not split. */
  private namedOf(catalogId: string): NamedProducts | undefined {
    const facets = this.facets;
    return facets && ((groups, most) => facets.productsWith(catalogId, groups, most));
  }

  /** The same for each part of a catalog split in `parts`: one lookup for them all (about `most` a part), each part given its own. */
  private namedByPart(catalogId: string, parts: number): ((part: number) => NamedProducts) | undefined {
    const facets = this.facets;
    if (!facets) return undefined;
    let lookup: ReturnType<FacetSource["productsWith"]> | undefined;
    return (part: number): NamedProducts =>
      async (groups, most) => {
        const named = await (lookup ??= facets.productsWith(catalogId, groups, most * parts));
        return typeof named === "object" ? named.filter((id) => partOf(id, parts) === part) : named;
      };
  }

  async vocabulary(catalogId: string, known: { build: string; size: number } | undefined): Promise<VocabularyRead> {
    const layout = await this.currentLayout(catalogId);
    // A vocabulary read from parts names them in its build, which the catalog's own tag never matches.
    if (!layout) return this.slots.vocabulary(catalogId, known);
    let sizes = known && partVocabularies(known.build, layout);
    let reads = await Promise.all(layout.tags.map((tag, k) => this.slots.vocabulary(tag, sizes?.[k])));
    if (reads.some((r) => r.build === undefined)) return { build: undefined, whole: true, words: [] };
    const whole = !sizes || reads.some((r) => r.whole);
    if (whole && sizes) {
      sizes = undefined;
      reads = await Promise.all(layout.tags.map((tag) => this.slots.vocabulary(tag, undefined)));
    }
    const parts = reads.map((r, k) => `${r.build}:${(sizes?.[k]?.size ?? 0) + r.words.length}`);
    return { build: [layout.name, ...parts].join("|"), whole, words: reads.flatMap((r) => r.words) };
  }

  async upsert(catalogId: string, entries: readonly IndexEntry[]): Promise<void> {
    const layout = await this.currentLayout(catalogId);
    if (!layout) return this.slots.upsert(catalogId, entries);
    const groups = byPart(entries, layout.tags.length, (e) => e.productId);
    await Promise.all(groups.map((group, k) => group.length > 0 && this.slots.upsert(layout.tags[k]!, group)));
  }

  async remove(catalogId: string, productIds: readonly string[]): Promise<void> {
    const layout = await this.currentLayout(catalogId);
    if (!layout) return this.slots.remove(catalogId, productIds);
    const groups = byPart(productIds, layout.tags.length, (id) => id);
    await Promise.all(groups.map((group, k) => group.length > 0 && this.slots.remove(layout.tags[k]!, group)));
  }

  /** Resolves once the filters being learned now (SlotIndex.learn) are held or given up. */
  settled(): Promise<void> {
    return this.slots.settled();
  }

  async rebuild(catalogId: string, version: string, pages: AsyncIterable<readonly IndexEntry[]>, { parts = 1, m }: IndexBuild = {}): Promise<number> {
    const before = await this.currentLayout(catalogId);
    let count: number;
    let generation: string | undefined;
    if (parts <= 1) {
      count = await this.slots.rebuild(catalogId, version, pages, m);
    } else {
      generation = randomBytes(4).toString("hex");
      const layout = layoutOf(catalogId, `${generation}.${parts}`);
      // Named before its parts hold a key: dropped by name later, committed or not.
      await this.slots.noteSplit(catalogId, layout.name);
      const builds = await Promise.all(layout.tags.map((tag) => this.slots.beginBuild(tag, m)));
      const counts = layout.tags.map(() => 0);
      for await (const page of pages) {
        const groups = byPart(page, parts, (e) => e.productId);
        await Promise.all(groups.map((group, k) => group.length > 0 && builds[k]!.add(group)));
        groups.forEach((group, k) => (counts[k]! += group.length));
      }
      await Promise.all(builds.map((build, k) => build.commit(version, counts[k]!)));
      count = counts.reduce((a, b) => a + b, 0);
      await this.slots.commitSplit(catalogId, version, layout.name, count);
    }
    this.layouts.delete(catalogId);
    // The previous layout's parts, and any a split that never committed left behind.
    await this.dropParts(catalogId, generation, before?.name);
    return count;
  }

  async parts(catalogId: string): Promise<number> {
    return (await this.currentLayout(catalogId))?.tags.length ?? 1;
  }

  async version(catalogId: string): Promise<string | undefined> {
    const layout = await this.currentLayout(catalogId);
    if (!layout) return this.slots.version(catalogId);
    // A part that lost its data (a shard's restart without persistence) makes the whole stale.
    const [own, ...parts] = await Promise.all([catalogId, ...layout.tags].map((tag) => this.slots.version(tag)));
    return parts.every((v) => v === own) ? own : undefined;
  }

  async element(catalogId: string, productId: string): Promise<Float32Array | undefined> {
    // Where this process last saw the catalog first (a recommendation's hot path); the layout is
    // read only when the element is not there, as after a split or a re-split.
    const known = this.layouts.get(catalogId);
    const found = await this.slots.element(tagOf(catalogId, known, productId), productId);
    if (found) return found;
    const layout = await this.currentLayout(catalogId);
    if (layout?.name === known?.name) return undefined;
    return this.slots.element(tagOf(catalogId, layout, productId), productId);
  }

  async drop(catalogId: string, options: { everyKey?: boolean } = {}): Promise<void> {
    // The parts first: the catalog's own keys name them.
    await this.dropParts(catalogId, undefined);
    this.layouts.delete(catalogId);
    await this.slots.drop(catalogId);
    if (options.everyKey) await this.slots.unlinkEveryKeyOf(catalogId, (tag) => catalogOf(tag) === catalogId);
  }

  async catalogIds(signal?: AbortSignal): Promise<string[]> {
    return [...new Set((await this.slots.tags(signal)).map(catalogOf))];
  }

  async claimOrphanSweep(ms: number): Promise<boolean> {
    return this.slots.claim("orphan-sweep", ms);
  }

  /** Exposed for benchmarks and operators: the catalog's vector sets' own memory use, in bytes. */
  async memoryUsage(catalogId: string): Promise<number> {
    const layout = await this.currentLayout(catalogId);
    const bytes = await Promise.all((layout?.tags ?? [catalogId]).map((tag) => this.slots.memoryUsage(tag)));
    return bytes.reduce((a, b) => a + b, 0);
  }

  /** Read from Redis, not remembered: writes and rebuilds must use the layout as it is now. */
  private async currentLayout(catalogId: string): Promise<Layout | undefined> {
    const name = await this.slots.layout(catalogId);
    return name === undefined ? undefined : layoutOf(catalogId, name);
  }

  private remember(catalogId: string, layout: Layout): void {
    this.layouts.delete(catalogId);
    if (this.layouts.size >= LAYOUTS_KEPT) this.layouts.delete(this.layouts.keys().next().value!);
    this.layouts.set(catalogId, layout);
  }

  /**
   * Drops the catalog's parts but those of generation `keep`, by name: of every layout noted, the
   * current one and `replaced` (splits from before the noting are named only in the meta).
   */
  private async dropParts(catalogId: string, keep: string | undefined, replaced?: string): Promise<void> {
    const layouts = new Set(await this.slots.splits(catalogId));
    for (const name of [await this.slots.layout(catalogId), replaced]) if (name) layouts.add(name);
    for (const name of layouts) {
      const layout = layoutOf(catalogId, name);
      if (layout.generation === keep) continue;
      for (const tag of layout.tags) await this.slots.drop(tag);
      await this.slots.forgetSplit(catalogId, name);
    }
  }
}

function layoutOf(catalogId: string, name: string): Layout {
  const [generation, parts] = name.split(".");
  const count = Number(parts);
  if (!generation || !Number.isInteger(count) || count < 2) throw new Error(`catalog ${catalogId}: unreadable index layout`);
  return { name, generation, tags: Array.from({ length: count }, (_, k) => `${catalogId}~${generation}.${k}`) };
}

/**
 * A split catalog's vocabulary build names its layout and each part's build and list length read
 * ("<layout>|<build>:<size>|..."); undefined when it names another layout.
 */
function partVocabularies(build: string, layout: Layout): { build: string; size: number }[] | undefined {
  const [name, ...parts] = build.split("|");
  if (name !== layout.name || parts.length !== layout.tags.length) return undefined;
  return parts.map((part) => {
    const colon = part.lastIndexOf(":");
    return { build: part.slice(0, colon), size: Number(part.slice(colon + 1)) };
  });
}

/** The catalog a tag is of: its own, or one of its parts' ("<catalogId>~<generation>.<k>"). */
function catalogOf(tag: string): string {
  return tag.split("~")[0]!;
}

/** The tag holding a product's element: the catalog's own, or the part its id hashes to. */
function tagOf(catalogId: string, layout: Layout | undefined, productId: string): string {
  return layout ? layout.tags[partOf(productId, layout.tags.length)]! : catalogId;
}

/** The part a product lives in: its id's hash, so every process and every write agree. */
function partOf(productId: string, parts: number): number {
  return createHash("md5").update(productId).digest().readUInt32BE(0) % parts;
}

function byPart<T>(items: readonly T[], parts: number, idOf: (item: T) => string): T[][] {
  const groups: T[][] = Array.from({ length: parts }, () => []);
  for (const item of items) groups[partOf(idOf(item), parts)]!.push(item);
  return groups;
}
