/** Where the service keeps its own copy of product images. */
export interface ObjectStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The address clients use to read the object (objectUrl). */
  urlOf(key: string): string;
}
