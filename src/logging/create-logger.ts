import pino from "pino";
import type { DestinationStream, LoggerOptions } from "pino";
import { safeError } from "./safe-error.js";

/**
 * Longest log line written. 4 KB keeps one event on one line that an operator can read, and a line
 * of at most PIPE_BUF bytes reaches a shared pipe in one piece: the worker processes write to the
 * service's standard output, and longer writes from two processes interleave mid-line.
 */
export const MAX_LOG_LINE_BYTES = 4096;

/** Fields kept when a line is cut to fit. */
const KEPT_FIELDS = ["level", "time", "pid", "hostname", "reqId", "msg"] as const;

/**
 * The service's one way to make a pino logger: errors pass through safeError (no statement values,
 * vectors or keys), and no line exceeds MAX_LOG_LINE_BYTES whatever a caller logs.
 */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): pino.Logger {
  return pino(
    {
      ...options,
      serializers: { ...options.serializers, err: safeError, error: safeError },
      hooks: { ...options.hooks, streamWrite: capLine },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** A line over the limit keeps its level, time, ids and message, and says how long it was. */
export function capLine(line: string): string {
  if (Buffer.byteLength(line) <= MAX_LOG_LINE_BYTES) return line;
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(line) as Record<string, unknown>;
  } catch {
    // Not JSON (a custom formatter): keep nothing but the length.
  }
  const kept: Record<string, unknown> = {};
  for (const field of KEPT_FIELDS) if (parsed[field] !== undefined) kept[field] = parsed[field];
  if (typeof kept.msg === "string" && kept.msg.length > 500) kept.msg = `${kept.msg.slice(0, 500)}...`;
  kept.truncatedBytes = Buffer.byteLength(line);
  return `${JSON.stringify(kept)}\n`;
}
