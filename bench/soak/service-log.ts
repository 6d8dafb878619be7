// Reads the service's stdout and stderr (its worker processes inherit them) as a stream of log
// lines: writes them to a file and keeps only figures, so a huge log never grows the bench's RSS.
import { createWriteStream } from "node:fs";
import type { Readable } from "node:stream";

/** Longer lines are measured but not parsed or kept. */
const KEEP_BYTES = 64 * 1024;

export interface MapFit {
  /** Seconds since the log started. */
  at: number;
  trainedOn: number | undefined;
  ms: number | undefined;
  bytes: number | undefined;
}

export interface IndexRebuild {
  /** Seconds since the log started. */
  at: number;
  products: number | undefined;
  ms: number | undefined;
}

export class ServiceLog {
  bytes = 0;
  lines = 0;
  /** Bytes of the per-request lines (Fastify's "incoming request" / "request completed"). */
  requestLineBytes = 0;
  longestLine = 0;
  longestLineStart = "";
  /** Lines that are not one JSON object: interleaved writes, stack traces, console output. */
  notJson = 0;
  readonly fits: MapFit[] = [];
  readonly rebuilds: IndexRebuild[] = [];
  /** Each POST /search's time inside the API (its request line's `ms`), in the order they ended. */
  readonly searchMs: number[] = [];
  /** warn and error lines by message. */
  readonly problems = new Map<string, number>();
  private readonly file;
  private readonly started = performance.now();
  private readonly waiters: { match: (entry: Record<string, unknown>) => boolean; resolve: () => void }[] = [];

  constructor(path: string, streams: Readable[]) {
    this.file = createWriteStream(path);
    for (const stream of streams) this.follow(stream);
  }

  /** Resolves at the first line for which `match` holds. */
  waitFor(match: (entry: Record<string, unknown>) => boolean): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.file.end(resolve));
  }

  private follow(stream: Readable): void {
    let head: Buffer[] = [];
    let headBytes = 0;
    let length = 0;
    stream.on("data", (chunk: Buffer) => {
      this.file.write(chunk);
      this.bytes += chunk.length;
      let from = 0;
      for (;;) {
        const newline = chunk.indexOf(10, from);
        const end = newline === -1 ? chunk.length : newline;
        const part = chunk.subarray(from, end);
        length += part.length;
        if (headBytes < KEEP_BYTES) {
          head.push(part);
          headBytes += part.length;
        }
        if (newline === -1) break;
        this.line(Buffer.concat(head), length);
        head = [];
        headBytes = 0;
        length = 0;
        from = newline + 1;
      }
    });
  }

  private line(head: Buffer, length: number): void {
    this.lines++;
    if (length > this.longestLine) {
      this.longestLine = length;
      this.longestLineStart = head.subarray(0, 160).toString("utf8");
    }
    if (length > KEEP_BYTES) {
      this.notJson += head[0] === 0x7b ? 0 : 1;
      return;
    }
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(head.toString("utf8")) as Record<string, unknown>;
    } catch {
      this.notJson++;
      return;
    }
    const msg = String(entry.msg ?? "");
    if (msg === "incoming request" || msg === "request completed") this.requestLineBytes += length + 1;
    const num = (v: unknown) => (typeof v === "number" ? v : undefined);
    if (msg === "request completed" && entry.route === "/search" && typeof entry.ms === "number") this.searchMs.push(entry.ms);
    if (msg === "vector index rebuilt from MySQL") {
      this.rebuilds.push({ at: (performance.now() - this.started) / 1000, products: num(entry.products), ms: num(entry.ms) });
    }
    if (msg === "text-to-image map fitted") {
      this.fits.push({ at: (performance.now() - this.started) / 1000, trainedOn: num(entry.trainedOn), ms: num(entry.ms), bytes: num(entry.bytes) });
    }
    if (typeof entry.level === "number" && entry.level >= 40) {
      const key = `${entry.level >= 50 ? "error" : "warn"}: ${msg.slice(0, 100)}`;
      this.problems.set(key, (this.problems.get(key) ?? 0) + 1);
    }
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.match(entry)) this.waiters.splice(i, 1)[0]!.resolve();
    }
  }
}
