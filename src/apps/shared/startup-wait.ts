import type { Logger } from "../../logging/index.js";

/** Start-up could not reach a store: one line for the operator, naming the variable to check. */
export class StartupError extends Error {
  override name = "StartupError";
}

export interface StoreTarget<T> {
  /** "MySQL", "Redis". */
  store: string;
  /** The environment variable that chose the address. */
  variable: string;
  /** Where the store was looked for, with any password masked. */
  address: string;
  open: () => Promise<T>;
  /** Errors that waiting cannot cure (bad credentials, wrong server version): fail at once. */
  permanent: (error: unknown) => boolean;
}

/**
 * Opens a store, retrying while it does not answer (it may still be starting, as on a machine that
 * boots everything at once) for up to `waitMs`, with one log line per failed attempt. Then gives up
 * with a StartupError whose message is the one line to print: store, address, reason, variable.
 */
export async function openWhenReachable<T>(target: StoreTarget<T>, waitMs: number, log: Logger): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1, delayMs = 250; ; attempt++, delayMs = Math.min(delayMs * 2, 2000)) {
    try {
      return await target.open();
    } catch (error) {
      const reason = reasonOf(error);
      if (target.permanent(error)) {
        // Messages of our own that already say what to do (e.g. Redis without vector sets) stand as they are.
        const own = error instanceof Error && error.message.includes(target.variable) ? error.message.split("\n")[0] : undefined;
        if (own !== undefined) throw new StartupError(own);
        throw new StartupError(`${target.store} at ${target.address} refused the service (${reason}): check ${target.variable}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new StartupError(
          `cannot reach ${target.store} at ${target.address} (${reason}) after ${attempt} attempts in ${Math.round(waitMs / 1000)} s: check ${target.variable}`,
        );
      }
      log.warn({ store: target.store, address: target.address, reason, attempt }, `${target.store} not reachable yet; retrying`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, left)));
    }
  }
}

/** A word for why: the first error code in the cause chain, else the innermost message. */
export function reasonOf(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  let current: unknown = error;
  for (let depth = 0; current && typeof current === "object" && depth < 5; depth++) {
    const { code, message: text } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(code)) return code;
    if (typeof text === "string") message = text;
    current = (current as { cause?: unknown }).cause;
  }
  return message.split("\n")[0]!.slice(0, 200);
}

/** The URL as the operator wrote it, with the password (if any) replaced. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}
