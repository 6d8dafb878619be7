import { clip, permanent } from "./errors.js";

/**
 * Parses a customer-supplied URL (or a redirect's Location, relative to the page that sent it)
 * and accepts only plain http(s) URLs without credentials: other schemes reach local files or
 * other protocols, and credentials in URLs end up in logs and error messages.
 */
export function parseImageUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw.trim(), base);
  } catch {
    throw permanent(`not a valid URL: ${clip(raw, 100)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw permanent(`unsupported URL scheme "${clip(url.protocol.replace(/:$/, ""), 20)}" (only http and https)`);
  }
  if (url.username !== "" || url.password !== "") {
    throw permanent("image URLs must not contain a user name or password");
  }
  if (url.hostname === "") throw permanent(`URL has no host: ${clip(raw, 100)}`);
  // The fragment is never sent, and dropping it makes redirect-loop detection exact.
  url.hash = "";
  return url;
}

/** The host to resolve or connect to: IPv6 literals lose their URL brackets. */
export function hostOf(url: URL): string {
  const host = url.hostname;
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
