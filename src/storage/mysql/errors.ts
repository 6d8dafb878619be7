/** Whether a driver error (or one drizzle wrapped around it: the driver's code sits on a cause) has this MySQL/MariaDB code. */
function hasDriverCode(error: unknown, code: string): boolean {
  let cause: unknown = error;
  for (let depth = 0; cause && depth < 5; depth++) {
    if ((cause as { code?: string }).code === code) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** MySQL/MariaDB "duplicate entry for key" (ER_DUP_ENTRY). */
export function isDuplicateKey(error: unknown): boolean {
  return hasDriverCode(error, "ER_DUP_ENTRY");
}

/** The transaction was chosen as a deadlock's victim and rolled back (ER_LOCK_DEADLOCK). */
export function isDeadlock(error: unknown): boolean {
  return hasDriverCode(error, "ER_LOCK_DEADLOCK");
}
