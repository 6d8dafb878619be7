// Where a product's photo sits in the text space, so that it can be compared with a text query and
// with other photos alike. A catalog with a fitted text-image map (see embeddings/text-image-map.ts)
// uses it; until it has one (too few described products), a photo stands for the colour names its
// pixels carry, weighted by their share of the product. Measured on fashion-dev's withheld half
// (bench/eval.ts data): mapped photo-to-photo precision@10 by type 0.504, by colour 0.293, against
// 0.401 / 0.164 for the raw MobileNet features, so recommendations compare mapped photos too.
import { COLOUR_NAMES, COLOUR_PROFILE_VERSION, l2NormaliseInPlace, textImageMapFromBytes } from "../embeddings/index.js";
import type { TextEncoder, TextImageMap } from "../embeddings/index.js";

export interface VisualSpace {
  /** Identifies the projection: vectors are comparable only under one version. */
  readonly version: string;
  project(image: Float32Array, colour: Float32Array): Float32Array;
}

/** A catalog's stored map, as the index and search read it. */
export interface StoredMap {
  /** Changes whenever the map's weights change (e.g. its fitting version, size and time). */
  identity: string;
  bytes(): Promise<Buffer>;
}

export function mappedVisualSpace(map: TextImageMap, identity: string): VisualSpace {
  return { version: mapSpaceVersion(identity), project: (image, colour) => map.apply(image, colour) };
}

/** The fallback: a photo as the L1-weighted mean of its colour names' word vectors. */
export function colourWordSpace(text: TextEncoder): VisualSpace {
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
export function visualSpaceVersion(mapIdentity: string | undefined, text: TextEncoder): string {
  return mapIdentity === undefined ? colourWordsVersion(text) : mapSpaceVersion(mapIdentity);
}

function mapSpaceVersion(identity: string): string {
  return `map:${identity}`;
}

function colourWordsVersion(text: TextEncoder): string {
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
    text: TextEncoder,
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
