// Peak RSS and CPU time of named processes, read from /proc (Linux), sampled on a timer. Processes
// are found by pid (the service) and by parent (the workers the service forks), so restarted
// workers are counted too.
import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS = 100;

export interface ProcessStats {
  pid: number;
  label: string;
  peakRssBytes: number;
  lastRssBytes: number;
  /** User + system CPU seconds since the process started. */
  cpuSeconds: number;
}

function readStat(pid: number): { ppid: number; cpuSeconds: number; rssBytes: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS, rssBytes: rssKb * 1024 };
  } catch {
    return undefined;
  }
}

export function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (readStat(Number(entry))?.ppid === parent) out.push(Number(entry));
  }
  return out;
}

/** The first process whose command line contains every one of `parts`. */
export function findProcess(parts: readonly string[]): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      if (parts.every((p) => cmdline.includes(p))) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

export class ProcSampler {
  readonly stats = new Map<number, ProcessStats>();
  private timer: NodeJS.Timeout | undefined;
  private lastChildScan = 0;
  private workerCount = 0;

  constructor(
    private readonly fixed: { pid: number; label: string }[],
    /** Its children are sampled as "worker N". */
    private readonly parentOfWorkers: number | undefined,
  ) {}

  start(intervalMs = 250): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  /** CPU seconds of each tracked process now, for per-phase deltas. */
  cpuNow(): Map<number, number> {
    this.sample();
    return new Map([...this.stats].map(([pid, s]) => [pid, s.cpuSeconds]));
  }

  sample(): void {
    const now = Date.now();
    if (this.parentOfWorkers !== undefined && now - this.lastChildScan > 2000) {
      this.lastChildScan = now;
      for (const pid of childrenOf(this.parentOfWorkers)) {
        if (!this.stats.has(pid)) this.track(pid, `worker ${++this.workerCount}`);
      }
    }
    for (const { pid, label } of this.fixed) if (!this.stats.has(pid)) this.track(pid, label);
    for (const s of this.stats.values()) {
      const stat = readStat(s.pid);
      if (!stat) continue;
      s.lastRssBytes = stat.rssBytes;
      s.peakRssBytes = Math.max(s.peakRssBytes, stat.rssBytes);
      s.cpuSeconds = stat.cpuSeconds;
    }
  }

  private track(pid: number, label: string): void {
    this.stats.set(pid, { pid, label, peakRssBytes: 0, lastRssBytes: 0, cpuSeconds: 0 });
  }
}
