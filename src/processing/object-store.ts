/** Where the service keeps its own copy of product images. */
export interface ObjectStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The key an image of a catalog is stored under, from its content hash (see object-key.ts). */
  keyFor(catalogId: string, imageSha256: string): string;
  /** The address clients use to read the object (objectUrl). */
  urlOf(key: string): string;
}
