import { Metadata } from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { StatusObject } from "@grpc/grpc-js";

/**
 * gRPC metadata as the Headers Connect's interceptors and handler context read: text values as
 * they are, `-bin` values base64-encoded, as they travel in HTTP/2 headers.
 */
export function headersOf(metadata: Metadata): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(metadata.toHttp2Headers())) {
    if (Array.isArray(value)) for (const one of value) headers.append(key, one);
    else if (value !== undefined) headers.append(key, String(value));
  }
  return headers;
}

/** Headers (a call's response header or trailer, an error's metadata) as gRPC metadata. */
export function metadataOf(...sources: (Headers | undefined)[]): Metadata {
  const metadata = new Metadata();
  for (const headers of sources) {
    headers?.forEach((value, key) => {
      if (key.endsWith("-bin")) metadata.add(key, Buffer.from(value, "base64"));
      else metadata.add(key, value);
    });
  }
  return metadata;
}

/**
 * The status a gRPC caller receives for an error: Connect's codes are gRPC's (same numbers), its
 * raw message is grpc-message, and its metadata (`retry-after`) the trailers.
 */
export function statusOf(error: unknown, trailer?: Headers): Partial<StatusObject> & { code: number; details: string; metadata: Metadata } {
  const connectError = ConnectError.from(error);
  return { code: connectError.code as number, details: connectError.rawMessage, metadata: metadataOf(trailer, connectError.metadata) };
}

/** What Connect answers for a message that does not parse, so both gRPC servers say the same. */
export function parseError(error: unknown): ConnectError {
  return new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.InvalidArgument);
}
