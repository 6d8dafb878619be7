export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** "p50 / p99 (max, n)" of latencies in ms. */
export function latencySummary(samples: readonly number[]): string {
  if (samples.length === 0) return "no samples";
  const sorted = [...samples].sort((a, b) => a - b);
  return `${percentile(sorted, 50).toFixed(1)} / ${percentile(sorted, 99).toFixed(1)} ms (max ${sorted[sorted.length - 1]!.toFixed(1)}, n ${sorted.length})`;
}

export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MB`;
}

export function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(2)} KB`;
}

/** Waits ms, without holding the process open. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
