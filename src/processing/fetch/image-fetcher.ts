import type { IncomingMessage } from "node:http";
import { readBody } from "./body-reader.js";
import { clip, formatBytes, fromNetworkError, ImageFetchError, permanent, transient } from "./errors.js";
import { openResponse } from "./http-request.js";
import {
  CANONICAL_CONTENT_TYPE,
  detectImageFormat,
  isAcceptableMediaType,
  mediaTypeOf,
  SIGNATURE_BYTES,
} from "./image-signature.js";
import type { ImageFormat } from "./image-signature.js";
import { resolveOptions } from "./options.js";
import type { ImageFetchOptions } from "./options.js";
import { RedirectTracker } from "./redirect-policy.js";
import { resolvePermittedAddresses } from "./safe-lookup.js";
import { checkStatus } from "./status-policy.js";
import { hostOf, parseImageUrl } from "./url-policy.js";

export interface FetchedImage {
  bytes: Buffer;
  /** The server's image/* type when it sent one, else the type the bytes imply. */
  contentType: string;
  /** Where the image was finally served from, after redirects. */
  finalUrl: string;
  format: ImageFormat;
}

export type ImageFetcher = (url: string, signal?: AbortSignal) => Promise<FetchedImage>;

/**
 * A downloader for customer-supplied image URLs. Every failure is an ImageFetchError saying
 * whether a later retry could succeed.
 */
export function createImageFetcher(overrides?: Partial<ImageFetchOptions>): ImageFetcher {
  const options = resolveOptions(overrides);
  return (url, signal) => fetchImage(url, options, signal);
}

async function fetchImage(rawUrl: string, options: ImageFetchOptions, callerSignal?: AbortSignal): Promise<FetchedImage> {
  let current = parseImageUrl(rawUrl);
  // One signal for every way the download can be cut short; its reason is the error to report.
  const controller = new AbortController();
  const cancel = () => controller.abort(transient("download was cancelled", callerSignal?.reason));
  if (callerSignal?.aborted) throw transient("download was cancelled", callerSignal.reason);
  callerSignal?.addEventListener("abort", cancel, { once: true });
  const deadline = setTimeout(
    () => controller.abort(transient(`timed out after ${options.totalTimeoutMs} ms`)),
    options.totalTimeoutMs,
  );

  try {
    const redirects = new RedirectTracker(current, options.maxRedirects);
    for (;;) {
      const addresses = await resolvePermittedAddresses(current, options.allowPrivateAddresses, controller.signal);
      const response = await openResponse(current, addresses, { ...options, signal: controller.signal });
      let next: URL | null;
      try {
        next = redirects.next(response.statusCode ?? 0, response.headers.location, current);
      } catch (error) {
        response.destroy();
        throw error;
      }
      if (next === null) return await receiveImage(response, current, options, controller.signal);
      // The redirect's body is of no interest, and the socket is ours alone (no agent).
      response.destroy();
      current = next;
    }
  } catch (error) {
    if (error instanceof ImageFetchError) throw error;
    const reason: unknown = controller.signal.reason;
    if (controller.signal.aborted && reason instanceof ImageFetchError) throw reason;
    throw fromNetworkError(error, hostOf(current));
  } finally {
    clearTimeout(deadline);
    callerSignal?.removeEventListener("abort", cancel);
  }
}

async function receiveImage(
  response: IncomingMessage,
  url: URL,
  options: ImageFetchOptions,
  signal: AbortSignal,
): Promise<FetchedImage> {
  const mediaType = mediaTypeOf(response.headers["content-type"]);
  const shownType = mediaType === "" ? "missing" : clip(mediaType, 60);
  const notAnImage = () =>
    permanent(
      mediaType.startsWith("image/")
        ? `not a supported image (content-type ${shownType}, but the data is not JPEG, PNG, GIF, WebP, AVIF, BMP or TIFF)`
        : `not an image (content-type ${shownType})`,
    );

  // Everything decidable from the head is decided before a byte of the body is read.
  try {
    checkStatus(response.statusCode ?? 0);
    if (!isAcceptableMediaType(mediaType)) throw notAnImage();
    const declaredLength = Number(response.headers["content-length"] ?? NaN);
    if (declaredLength > options.maxBytes) throw permanent(`image is larger than ${formatBytes(options.maxBytes)}`);
  } catch (error) {
    response.destroy();
    throw error;
  }

  const bytes = await readBody(response, {
    maxBytes: options.maxBytes,
    signal,
    headBytes: SIGNATURE_BYTES,
    inspectHead: (head) => {
      if (detectImageFormat(head) === null) throw notAnImage();
    },
  });
  if (bytes.length === 0) throw permanent("image URL returned an empty body");
  const format = detectImageFormat(bytes);
  if (format === null) throw notAnImage();
  return {
    bytes,
    contentType: mediaType.startsWith("image/") ? mediaType : CANONICAL_CONTENT_TYPE[format],
    finalUrl: url.href,
    format,
  };
}
