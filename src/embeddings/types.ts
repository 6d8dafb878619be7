// The encoders' contracts, shared by the search and indexing code.

export interface ImageEncoder {
  /** Changes whenever vectors would change (model, input size, preprocessing). */
  readonly version: string;
  readonly dimensions: number;
  /** Any image sharp can decode (JPEG/PNG/WebP/GIF/AVIF). Returns an L2-normalised vector. */
  encode(image: Buffer): Promise<Float32Array>;
  /**
   * encode's vector and colourProfile's histogram from a single decode of the image: what
   * processing stores per product, for one sharp decode instead of two.
   */
  encodeWithColour(image: Buffer): Promise<{ image: Float32Array; colour: Float32Array }>;
}

export interface SentenceEncoder {
  readonly version: string;
  readonly dimensions: number;
  /** L2-normalised; an all-zero vector when no word is known (callers treat it as "no text signal"). */
  encode(text: string): Float32Array;
}

export interface Encoders {
  image: ImageEncoder;
  text: SentenceEncoder;
  /** Model version of the pair, stored with every embedding. */
  version: string;
  close(): Promise<void>;
}
