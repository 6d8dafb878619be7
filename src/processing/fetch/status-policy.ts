import { STATUS_CODES } from "node:http";
import { permanent, transient } from "./errors.js";

/**
 * Turns a non-2xx status into an error. The reason phrase comes from Node's table, never from
 * the response: the server's own status text is untrusted and would end up shown to customers.
 */
export function checkStatus(status: number): void {
  if (status >= 200 && status < 300) return;
  const label = `${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ""}`;
  // These say "not now" rather than "never": overload, rate limiting, a slow client.
  if (status === 408 || status === 429 || (status >= 500 && status < 600)) throw transient(`image server answered ${label}`);
  throw permanent(`image URL answered ${label}`);
}
