/**
 * Why an image download failed. The message is stored as the product's error reason and shown
 * to the customer, so it must be short, human and free of anything the remote server wrote
 * (bodies, status texts): the server is untrusted.
 */
export class ImageFetchError extends Error {
  override name = "ImageFetchError";
  constructor(
    /** transient: worth retrying later. permanent: retrying cannot help. */
    readonly kind: "transient" | "permanent",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const transient = (message: string, cause?: unknown) =>
  new ImageFetchError("transient", message, cause === undefined ? undefined : { cause });

export const permanent = (message: string, cause?: unknown) =>
  new ImageFetchError("permanent", message, cause === undefined ? undefined : { cause });

const TRANSIENT_CODES: Record<string, string> = {
  ECONNRESET: "the connection to {host} was reset",
  ECONNREFUSED: "{host} refused the connection",
  EPIPE: "the connection to {host} was closed unexpectedly",
  ETIMEDOUT: "the connection to {host} timed out",
  EHOSTUNREACH: "{host} is unreachable",
  ENETUNREACH: "{host} is unreachable",
  EAI_AGAIN: "could not resolve host {host} (DNS temporarily unavailable)",
};

/**
 * Maps a socket, DNS or parser error to an ImageFetchError. Unknown errors count as transient:
 * a spurious retry is cheaper than wrongly giving up on a customer's image for good.
 */
export function fromNetworkError(error: unknown, host: string): ImageFetchError {
  if (error instanceof ImageFetchError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const text = typeof code === "string" ? code : "";
  if (text === "ENOTFOUND" || text === "ENODATA") return permanent(`host not found: ${host}`, error);
  const template = TRANSIENT_CODES[text];
  if (template !== undefined) return transient(template.replace("{host}", host), error);
  if (text.startsWith("HPE_")) return permanent(`${host} sent a malformed HTTP response`, error);
  // A broken certificate or TLS setup is the image host's configuration, not a passing fault.
  if (text.startsWith("ERR_TLS_") || text.startsWith("ERR_SSL_") || text === "EPROTO" || isCertificateCode(text)) {
    return permanent(`could not establish a secure connection to ${host} (${text})`, error);
  }
  return transient(`download from ${host} failed${text ? ` (${text})` : ""}`, error);
}

function isCertificateCode(code: string): boolean {
  return /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code);
}

/** Renders a byte limit the way people read it: "20 MiB", "512 KiB", "100 bytes". */
export function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  return `${bytes} bytes`;
}

/** Keeps server- or customer-supplied text from bloating or garbling a stored message. */
export function clip(text: string, max = 200): string {
  const printable = text.replace(/[^\x20-\x7e]/g, "?");
  return printable.length <= max ? printable : `${printable.slice(0, max - 1)}…`;
}
