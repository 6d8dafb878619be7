export interface ImageFetchOptions {
  /** false in production; only tests against loopback servers turn it on. */
  allowPrivateAddresses: boolean;
  /** Limit on establishing the TCP connection of each hop. */
  connectTimeoutMs: number;
  /** Limit on the whole download, redirects and DNS included. */
  totalTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  userAgent: string;
}

export const DEFAULT_IMAGE_FETCH_OPTIONS: ImageFetchOptions = Object.freeze({
  allowPrivateAddresses: false,
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 20_000,
  maxBytes: 20 * 1024 * 1024,
  maxRedirects: 3,
  userAgent: "VitrineImageFetcher/1.0",
});

/** Fills in defaults and rejects nonsense early: a NaN timeout would silently mean "no timeout". */
export function resolveOptions(overrides: Partial<ImageFetchOptions> = {}): ImageFetchOptions {
  const options = { ...DEFAULT_IMAGE_FETCH_OPTIONS, ...dropUndefined(overrides) };
  for (const key of ["connectTimeoutMs", "totalTimeoutMs", "maxBytes"] as const) {
    if (!Number.isFinite(options[key]) || options[key] <= 0) {
      throw new RangeError(`image fetch option ${key} must be a positive number, got ${options[key]}`);
    }
  }
  if (!Number.isInteger(options.maxRedirects) || options.maxRedirects < 0) {
    throw new RangeError(`image fetch option maxRedirects must be a non-negative integer, got ${options.maxRedirects}`);
  }
  return options;
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
