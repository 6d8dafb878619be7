// How many of a tag's elements a filter passes, estimated from a random sample of their attributes
// (VRANDMEMBER) that this process keeps a while. It sizes HNSW's depth for a filter pushed down into
// the walk (VSIM ... FILTER): Redis's filtered walk keeps EF elements that PASS and stops once no
// candidate is nearer than the last of them, so at a share s it explores about EF / s elements. At
// SEARCH_EF it explored up to FILTER-EF (100 for each of the 20 elements a filtered search asks:
// 2,000) for any filter passing under a tenth or so, about ten times what an unfiltered search
// explores; at SEARCH_EF times s it explores what an unfiltered search does. Raw, at 100k, a 10%
// filter walked at EF 40 gave the same recall as at 250 (1.000) in a tenth of the time, and a 1%
// filter the same at EF 40 and at 250 (0.954-0.955; 0.926 at EF 20), its walk bounded by FILTER-EF
// either way (README "How deep a filtered walk goes"). Only for sets of at most 200,000 elements
// (slot-index.ts SIZED_WALK_MOST): in sets of 500,000 the shallower walk lost recall, on graphs of
// 16 links a node and of 32 alike. The sample also names the fields that hold strings only, whose
// eq and in filters are pushed in a cheaper form (filter-expression.ts), and the filters so rare
// that a walk would come up short (rare()): at 100k, a filter passed by 0.1% left HNSW short of the
// hits asked on nearly every query, and the exact scan after it cost the walk's 35 ms besides.
import type { JsonObject } from "../../catalogs/index.js";
import { matchesFilters } from "../../search/index.js";
import type { MetadataFilter } from "../../search/index.js";
import { NO_STRING_FIELDS } from "./filter-expression.js";

/**
 * Elements sampled a tag: a share of 10% is known within about 1 point (one standard deviation),
 * and 0.1% from 1%: 200 held none of either often (13% of the time for a 1% filter).
 */
export const FILTER_SHARE_SAMPLE = 1000;
/**
 * A filter that at most this many of a full sample pass is rare: about 0.2% of the set or fewer.
 * Of a 1% filter's samples, 0.3% pass so few; of a 0.1% filter's, 92%.
 */
export const RARE_MOST_PASSING = 2;
/** A sample is read again after this long, so that a catalog that changes is followed. */
const SAMPLE_MAX_AGE_MS = 5 * 60_000;
/** After a failed read (Redis away), no other before this long. */
const RETRY_AFTER_MS = 10_000;
/** Tags whose samples are kept (each about 1,000 attribute objects); past it the least recently asked goes. */
const TAGS_KEPT = 64;
/**
 * Characters of attribute JSON the samples hold in all, past which the least recently asked go too
 * (but the latest): 64 samples of 500-byte metadata, two of the 16 KB a product may have.
 */
export const SAMPLE_CHARS_KEPT = 32_000_000;
/** Filters whose passing counts a sample keeps; past it, they are counted afresh. */
const COUNTS_KEPT = 1024;

interface Sample {
  attributes: readonly JsonObject[];
  /** Fields the sample holds, each only as strings. */
  stringFields: ReadonlySet<string>;
  /** How many of the sample pass each filter counted so far (key: the filters as JSON). */
  passing: Map<string, number>;
  /** Characters of its attributes as JSON. */
  chars: number;
  readAt: number;
}

/** Reads a random sample of a tag's elements' attributes (none for an empty or missing set). */
export type SampleReader = (tag: string, size: number) => Promise<JsonObject[]>;

export class FilterShares {
  private readonly samples = new Map<string, Sample>();
  private chars = 0;
  private readonly reading = new Map<string, Promise<void>>();
  private readonly failedAt = new Map<string, number>();

  constructor(
    private readonly read: SampleReader,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The share of the tag's sample that passes `filters`, or undefined while none is held (one is
   * then read, beside the caller: the query goes on without it). A sample read long ago is used
   * while another is read.
   */
  share(tag: string, filters: readonly MetadataFilter[]): number | undefined {
    const sample = this.held(tag);
    if (!sample || sample.attributes.length === 0) return undefined;
    return passingCount(sample, filters) / sample.attributes.length;
  }

  /**
   * Whether a full sample of the tag is held and at most RARE_MOST_PASSING of it pass `filters`
   * (false while none is held: one is then read, as share()).
   */
  rare(tag: string, filters: readonly MetadataFilter[]): boolean {
    const sample = this.held(tag);
    if (!sample || sample.attributes.length < FILTER_SHARE_SAMPLE) return false;
    return passingCount(sample, filters) <= RARE_MOST_PASSING;
  }

  /** The fields that every sampled element holding them holds as a string (none while no sample is held, as share()). */
  stringFields(tag: string): ReadonlySet<string> {
    return this.held(tag)?.stringFields ?? NO_STRING_FIELDS;
  }

  /** The tag's sample, read again beside the caller when there is none or it is old. */
  private held(tag: string): Sample | undefined {
    const sample = this.samples.get(tag);
    if (!sample || this.now() - sample.readAt > SAMPLE_MAX_AGE_MS) this.refresh(tag);
    if (!sample) return undefined;
    // Most recently asked last: the first in the map is the next to go.
    this.samples.delete(tag);
    this.samples.set(tag, sample);
    return sample;
  }

  private drop(tag: string): void {
    const sample = this.samples.get(tag);
    if (!sample) return;
    this.samples.delete(tag);
    this.chars -= sample.chars;
  }

  /** Resolves once the samples being read are held (or not): for tests. */
  async settled(): Promise<void> {
    while (this.reading.size > 0) await Promise.all(this.reading.values());
  }

  private refresh(tag: string): void {
    if (this.reading.has(tag)) return;
    const failed = this.failedAt.get(tag);
    if (failed !== undefined && this.now() - failed < RETRY_AFTER_MS) return;
    const reading = this.read(tag, FILTER_SHARE_SAMPLE)
      .then(
        (attributes) => {
          this.failedAt.delete(tag);
          this.drop(tag);
          const chars = attributes.reduce((n, a) => n + JSON.stringify(a).length, 0);
          this.samples.set(tag, { attributes, stringFields: stringFieldsOf(attributes), passing: new Map(), chars, readAt: this.now() });
          this.chars += chars;
          while (this.samples.size > 1 && (this.samples.size > TAGS_KEPT || this.chars > SAMPLE_CHARS_KEPT)) this.drop(this.samples.keys().next().value!);
        },
        // Only an estimate: the query that asked went on at full depth, and so do the next ones a while.
        () => {
          this.failedAt.set(tag, this.now());
          if (this.failedAt.size > TAGS_KEPT) this.failedAt.delete(this.failedAt.keys().next().value!);
        },
      )
      .finally(() => this.reading.delete(tag));
    this.reading.set(tag, reading);
  }
}

/** How many of the sample pass the filters: counted once a sample (a storefront asks the same filters again). */
function passingCount(sample: Sample, filters: readonly MetadataFilter[]): number {
  const key = JSON.stringify(filters);
  const counted = sample.passing.get(key);
  if (counted !== undefined) return counted;
  let passing = 0;
  for (const attributes of sample.attributes) if (matchesFilters(filters, attributes)) passing++;
  if (sample.passing.size >= COUNTS_KEPT) sample.passing.clear();
  sample.passing.set(key, passing);
  return passing;
}

function stringFieldsOf(sample: readonly JsonObject[]): Set<string> {
  const strings = new Set<string>();
  const others = new Set<string>();
  for (const attributes of sample) {
    for (const [field, value] of Object.entries(attributes)) (typeof value === "string" ? strings : others).add(field);
  }
  for (const field of others) strings.delete(field);
  return strings;
}
