import { createHmac } from "node:crypto";

/**
 * The key a product image is stored under: `<catalog uuid>/<HMAC-SHA256(secret, "<catalog>/<sha256
 * of the source image>")>.jpg`. Without the secret, knowing a catalog's id and a product's public
 * image URL is not enough to compute it, so the objectUrl works as a capability. Same image in
 * the same catalog, same key: the stored copy is shared. Earlier versions used the bare sha256;
 * those keys have the same shape and are still served.
 */
export function objectKeyFor(secret: Buffer, catalogId: string, imageSha256: string): string {
  const name = createHmac("sha256", secret).update(`${catalogId}/${imageSha256}`).digest("hex");
  return `${catalogId}/${name}.jpg`;
}
