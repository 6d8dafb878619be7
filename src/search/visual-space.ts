// Where a product's photo sits in the text space, so that it can be compared with a text query and
// with other photos alike. A catalog with a fitted text-image map (see embeddings/text-image-map.ts)
// uses it; until it has one (too few described products), a photo stands for the colour names its
// pixels carry, weighted by their share of the product. Measured on fashion-dev's withheld half
// (bench/eval.ts data): mapped photo-to-photo precision@10 by type 0.504, by colour 0.293, against
// 0.401 / 0.164 for the raw MobileNet features, so recommendations compare mapped photos too.
import { COLOUR_NAMES, COLOUR_PROFILE_VERSION, l2NormaliseInPlace, textImageMapFromBytes } from "../embeddings/index.js";
import type { SentenceEncoder, TextImageMap } from "../embeddings/index.js";

export interface VisualSpace {
  /** Identifies the projection: vectors are comparable only under one version. */
  readonly version: string;
  project(image: Float32Array, colour: Float32Array): Float32Array;
  /**
   * A text query's visual side, given its word vector: the catalog's map places it beside the
   * prototypes of its words (embeddings/word-prototypes.ts); without a map, the word vector.
   */
  query?(text: string, words: Float32Array): Float32Array;
}

/**
 * The visual side of a recommendation's query: where the subject sits in the text space. Its photo
 * (mapped), and when it has a descriptor, the mean of that and the descriptor's vector, both unit
 * length, at equal weight (not tuned): a described subject's words say what its photo shows more
 * surely than the photo's projection does. Measured on fashion-dev through bench/eval.ts (map
 * fitted on the described half): same type among the top 10 for described subjects 0.664 -> 0.684,
 * undescribed subjects unchanged (they have no words). Blending the descriptors of the *other*
 * products into their indexed photos instead was measured too and rejected: described subjects
 * 0.709, but undescribed ones fell 0.558 -> 0.531.
 */
export function recommendationVisual(photo: Float32Array, descriptor: Float32Array): Float32Array {
  if (descriptor.length !== photo.length || !descriptor.some((v) => v !== 0)) return photo;
  const out = new Float32Array(photo.length);
  for (let i = 0; i < out.length; i++) out[i] = photo[i]! + descriptor[i]!;
  return l2NormaliseInPlace(out);
}

/** A catalog's stored map, as the index and search read it. */
export interface StoredMap {
  /** Changes whenever the map's weights change (e.g. its fitting version, size and time). */
  identity: string;
  bytes(): Promise<Buffer>;
}

export function mappedVisualSpace(map: TextImageMap, identity: string): VisualSpace {
  return {
    version: mapSpaceVersion(identity),
    project: (image, colour) => map.apply(image, colour),
    query: (text, words) => map.queryVisual(text, words),
  };
}

/** The fallback: a photo as the L1-weighted mean of its colour names' word vectors. */
export function colourWordSpace(text: SentenceEncoder): VisualSpace {
  const words = COLOUR_NAMES.map((name) => text.encode(name));
  return {
    version: colourWordsVersion(text),
    project(_image, colour) {
      const out = new Float32Array(text.dimensions);
      for (let c = 0; c < words.length; c++) {
        const share = colour[c] ?? 0;
        if (share === 0) continue;
        const word = words[c]!;
        for (let i = 0; i < out.length; i++) out[i]! += share * word[i]!;
      }
      return l2NormaliseInPlace(out);
    },
  };
}

/** The version a catalog's visual space has, without reading or parsing the map itself. */
export function visualSpaceVersion(mapIdentity: string | undefined, text: SentenceEncoder): string {
  return mapIdentity === undefined ? colourWordsVersion(text) : mapSpaceVersion(mapIdentity);
}

function mapSpaceVersion(identity: string): string {
  return `map:${identity}`;
}

function colourWordsVersion(text: SentenceEncoder): string {
  return `colour-words:${COLOUR_PROFILE_VERSION}:${text.version}`;
}

/**
 * Parsed maps by identity, read once per version, not per request. A map is up to ~6 MB (its
 * kernel's landmark photos), so only a few are kept.
 */
export class VisualSpaces {
  private readonly parsed = new Map<string, Promise<VisualSpace>>();
  private readonly fallback: VisualSpace;

  constructor(
    text: SentenceEncoder,
    private readonly capacity = 8,
  ) {
    this.fallback = colourWordSpace(text);
  }

  async forMap(map: StoredMap | undefined): Promise<VisualSpace> {
    if (!map) return this.fallback;
    let space = this.parsed.get(map.identity);
    if (!space) {
      space = map.bytes().then((bytes) => mappedVisualSpace(textImageMapFromBytes(bytes), map.identity));
      space.catch(() => this.parsed.delete(map.identity));
      this.parsed.set(map.identity, space);
      if (this.parsed.size > this.capacity) this.parsed.delete(this.parsed.keys().next().value!);
    }
    return space;
  }
}
