import { ConfigError } from "../../config/index.js";
import type { Logger } from "../../logging/index.js";
import { StartupError } from "./startup-wait.js";

/**
 * Runs `stop` once on SIGTERM or SIGINT (and, with `whenParentExits`, when the process that forked
 * this one goes), then exits 0, or 1 if it failed; a second signal exits at once.
 */
export function stopOnSignals(stop: () => Promise<void>, log: Logger, message: string, options: { whenParentExits?: boolean } = {}): void {
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, message);
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  if (options.whenParentExits) process.on("disconnect", () => onSignal("parent exited"));
}

/** Says why start-up failed (the message alone for the errors written for operators) and exits 1. */
export function exitOnStartFailure(error: unknown): never {
  if (error instanceof ConfigError || error instanceof StartupError) console.error(error.message);
  else console.error("vitrine failed to start:", error);
  process.exit(1);
}
