/** The reason stored when a product runs out of attempts; lastReason is its last failure, if any. */
export function gaveUpReason(attempts: number, lastReason: string | null): string {
  return `gave up after ${attempts} attempts: ${lastReason ?? "the worker processing it stopped"}`;
}

/** A product claimed for processing: what the worker needs, and what it saw last time. */
export interface ClaimedProduct {
  catalogId: string;
  productId: string;
  /** Results only land if the product still has this generation (it was not replaced meanwhile). */
  generation: number;
  /** Claims of this generation so far, this one included. */
  attempts: number;
  imageUrl: string;
  descriptor: string;
  /** The image fetched by an earlier run, if its embeddings are stored. */
  previous: { fetchedImageUrl: string; imageSha256: string; modelVersion: string; objectKey: string } | undefined;
}

export interface Embeddings {
  modelVersion: string;
  image: Float32Array;
  colour: Float32Array;
  text: Float32Array;
}

export interface ProcessedResult {
  objectKey: string;
  fetchedImageUrl: string;
  imageSha256: string;
  /** Undefined image/colour keeps the stored ones (the image did not change). */
  embeddings: Embeddings | { modelVersion: string; text: Float32Array; image?: undefined; colour?: undefined };
}

/**
 * The durable work queue. Products wait in it while PROCESSING; a claim is a lease that expires,
 * so work held by a crashed worker returns to the queue by itself.
 */
export interface ProcessingQueue {
  /**
   * Leases up to `limit` products that are due. Products already claimed `maxAttempts` times
   * (their workers kept dying) are marked ERROR instead of being handed out again.
   */
  claim(owner: string, limit: number, leaseMs: number, maxAttempts: number): Promise<ClaimedProduct[]>;
  /** Stores the result and marks PROCESSED; false when the product was replaced or deleted meanwhile. */
  complete(job: ClaimedProduct, owner: string, result: ProcessedResult): Promise<boolean>;
  /** Releases the lease; the product is due again at `retryAt`. */
  retryLater(job: ClaimedProduct, owner: string, reason: string, retryAt: Date): Promise<void>;
  /** Marks ERROR with a reason people can read. */
  fail(job: ClaimedProduct, owner: string, reason: string): Promise<void>;
  /**
   * Puts processed products whose embeddings come from another model version back in the queue;
   * returns how many. Run when models change, so no product keeps vectors of an old model.
   */
  requeueStale(modelVersion: string): Promise<number>;
}
