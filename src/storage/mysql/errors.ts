/** MySQL/MariaDB "duplicate entry for key" (ER_DUP_ENTRY). */
export function isDuplicateKey(error: unknown): boolean {
  let cause: unknown = error;
  // drizzle wraps driver errors; the driver's code sits on the cause.
  for (let depth = 0; cause && depth < 5; depth++) {
    if ((cause as { code?: string }).code === "ER_DUP_ENTRY") return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
