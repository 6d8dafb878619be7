/**
 * What processing needs from the models, whatever they are: the composition root adapts the
 * embeddings module to this, so a CLIP-style model can replace it without touching the pipeline.
 */
export interface ProductEncoders {
  /** Changes whenever any vector would change; stored with every embedding. */
  readonly version: string;
  /** Any image as fetched; rejects with UndecodableImageError when it cannot be decoded. */
  encodeImage(image: Buffer): Promise<{ image: Float32Array; colour: Float32Array }>;
  encodeText(text: string): Float32Array;
}
