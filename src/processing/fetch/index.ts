export { createImageFetcher } from "./image-fetcher.js";
export type { FetchedImage, ImageFetcher } from "./image-fetcher.js";
export { ImageFetchError } from "./errors.js";
export { DEFAULT_IMAGE_FETCH_OPTIONS } from "./options.js";
export type { ImageFetchOptions } from "./options.js";
export type { ImageFormat } from "./image-signature.js";
