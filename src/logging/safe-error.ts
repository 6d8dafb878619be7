// What a log line may say about an error. Errors from the database and Redis drivers carry the
// statement with its parameters (drizzle's message is "Failed query: <sql> params: <values>"),
// mysql2's `sql` with the values inlined, and ioredis's `command.args` (vectors, ids, keys): logged
// as they are, one failed save of a text-image map wrote 86 MB of floats to one line. So a driver
// error is logged by its code and the shape of its statement; other errors by their type, message
// and a short stack, all bounded.

/** Longest message kept from an error that is not a driver's. */
const MESSAGE_CHARS = 300;
/** Longest statement shape kept: the SQL text with its placeholders, never its values. */
const STATEMENT_CHARS = 300;
const STACK_FRAMES = 8;
/** Causes followed at most (drizzle wraps mysql2, which may wrap a socket error). */
const CAUSE_DEPTH = 3;

export interface SafeError {
  type: string;
  message?: string;
  code?: string | number;
  errno?: number;
  sqlState?: string;
  /** The statement's text with placeholders (SQL), or the command's name (Redis). */
  statement?: string;
  stack?: string;
  cause?: SafeError;
}

/** A bounded, value-free description of any thrown thing, for pino's `err` serializer. */
export function safeError(error: unknown, depth = 0): SafeError {
  if (!(error instanceof Error)) return { type: typeof error, message: cut(String(error), MESSAGE_CHARS) };
  const e = error as Error & Record<string, unknown>;
  const out: SafeError = { type: e.constructor?.name || e.name || "Error" };
  const driver = driverShape(e);
  if (driver) Object.assign(out, driver);
  else {
    out.message = cut(e.message, MESSAGE_CHARS);
    if (typeof e.code === "string" || typeof e.code === "number") out.code = e.code;
  }
  if (typeof e.stack === "string") out.stack = stackFrames(e.stack);
  if (e.cause !== undefined && depth < CAUSE_DEPTH) out.cause = safeError(e.cause, depth + 1);
  return out;
}

/** The parts of a driver error that carry no values: undefined for other errors. */
function driverShape(e: Error & Record<string, unknown>): Partial<SafeError> | undefined {
  // drizzle: the statement with placeholders in `query`, the values in `params` and the message.
  if (typeof e.query === "string" && "params" in e) return { message: "query failed", statement: cut(e.query, STATEMENT_CHARS) };
  // mysql2: `sql` holds the statement as sent (values inlined by query()); the message may quote
  // a value ("Duplicate entry '...' for key"). Its codes say what went wrong.
  if (typeof e.sqlState === "string" || typeof e.sqlMessage === "string" || (typeof e.code === "string" && /^(ER_|PROTOCOL_)/.test(e.code))) {
    return {
      message: "database error",
      ...(typeof e.code === "string" ? { code: e.code } : {}),
      ...(typeof e.errno === "number" ? { errno: e.errno } : {}),
      ...(typeof e.sqlState === "string" ? { sqlState: e.sqlState } : {}),
    };
  }
  // ioredis: `command` is { name, args }; the args are the values. Redis's own replies name the
  // problem without echoing arguments.
  const command = e.command as { name?: unknown } | undefined;
  if (command && typeof command === "object" && typeof command.name === "string") {
    return { message: cut(e.message, MESSAGE_CHARS), statement: cut(command.name, 40) };
  }
  return undefined;
}

function stackFrames(stack: string): string {
  // The first line repeats the message, which a driver's may fill with values.
  const frames = stack.split("\n").filter((line) => /^\s+at /.test(line));
  return frames.slice(0, STACK_FRAMES).map((line) => cut(line.trim(), 200)).join("\n");
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}... (${text.length} chars)`;
}
