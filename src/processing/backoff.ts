/** Delay before retry number `attempt` (1-based): 2 s, 8 s, 32 s, ... capped, with jitter. */
export function retryDelayMs(attempt: number, baseMs: number, capMs: number): number {
  const exponential = Math.min(capMs, baseMs * 4 ** Math.max(0, attempt - 1));
  // Jitter spreads the retries of a batch that failed together (one image host down).
  return Math.round(exponential * (0.75 + Math.random() * 0.5));
}
