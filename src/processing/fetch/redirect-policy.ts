import { clip, ImageFetchError, permanent } from "./errors.js";
import { parseImageUrl } from "./url-policy.js";

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Follows redirects by hand, one hop at a time, so every hop can be checked against the URL and
 * address policies before anything is sent to it (an automatic follower would happily go from a
 * public host to http://169.254.169.254/).
 */
export class RedirectTracker {
  private readonly visited = new Set<string>();
  private followed = 0;

  constructor(
    start: URL,
    private readonly maxRedirects: number,
  ) {
    this.visited.add(start.href);
  }

  get count(): number {
    return this.followed;
  }

  /**
   * The URL to fetch next when `status` is a redirect, or null when it is not. Throws a
   * permanent error for redirects that must not be followed.
   */
  next(status: number, location: string | undefined, current: URL): URL | null {
    if (!REDIRECT_STATUSES.has(status)) return null;
    if (location === undefined || location.trim() === "") {
      throw permanent(`image URL redirected (${status}) without saying where to`);
    }
    let target: URL;
    try {
      target = parseImageUrl(location, current);
    } catch (error) {
      if (error instanceof ImageFetchError) throw permanent(`redirect refused: ${error.message}`);
      throw error;
    }
    this.followed += 1;
    if (this.visited.has(target.href)) throw permanent(`redirect loop at ${clip(target.href)}`);
    if (this.followed > this.maxRedirects) {
      throw permanent(`too many redirects (${this.followed}), last: ${clip(target.href)}`);
    }
    this.visited.add(target.href);
    return target;
  }
}
