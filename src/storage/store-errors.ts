import { DrizzleQueryError } from "drizzle-orm";

import type { Store } from "../operations/index.js";

const REDIS_ERROR_NAMES = new Set(["ReplyError", "MaxRetriesPerRequestError", "ParserError", "AbortError", "ClusterAllFailedError"]);
// ioredis raises these as plain Errors.
const REDIS_MESSAGES = [/^Connection is closed\.?$/, /^Command timed out$/, /^Stream isn't writeable/];

/**
 * Walks the cause chain looking for the marks each client leaves: a failed drizzle query (drizzle
 * runs only MySQL here), mysql2 errors with an SQL state or an ER_/PROTOCOL_ code; ioredis errors
 * with their own classes or fixed messages. A bare network error (ECONNREFUSED) names no store and is not attributed.
 */
export function storeOf(error: unknown): Store | undefined {
  let current: unknown = error;
  for (let depth = 0; current && typeof current === "object" && depth < 5; depth++) {
    const { name, code, sqlState, message } = current as { name?: unknown; code?: unknown; sqlState?: unknown; message?: unknown };
    if (typeof sqlState === "string" || (typeof code === "string" && /^(ER_|PROTOCOL_)/.test(code)) || current instanceof DrizzleQueryError) {
      return "mysql";
    }
    if (typeof name === "string" && REDIS_ERROR_NAMES.has(name)) return "redis";
    if (typeof message === "string" && REDIS_MESSAGES.some((pattern) => pattern.test(message))) return "redis";
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

// Network failures: the store is away, not faulty. mysql2 reports them with these codes (plus
// `fatal: true`), drizzle wraps them in a DrizzleQueryError.
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "ER_SERVER_SHUTDOWN",
  "ER_CON_COUNT_ERROR",
]);
const MYSQL_CLOSED = /^Can't add new command when connection is in closed state$/;
// ioredis, with its offline queue off, refuses commands at once while disconnected.
const REDIS_AWAY = [/^Stream isn't writeable/, /^Connection is closed\.?$/, /^Command timed out$/, /enableOfflineQueue/];

/**
 * The store that is unreachable when `error` says so (a refused or lost connection, a timeout),
 * undefined for anything else, real faults included.
 */
export function unavailableStore(error: unknown): Store | undefined {
  let mysqlSeen = false;
  let current: unknown = error;
  for (let depth = 0; current && typeof current === "object" && depth < 5; depth++) {
    const { name, code, message, fatal } = current as { name?: unknown; code?: unknown; message?: unknown; fatal?: unknown };
    if (current instanceof DrizzleQueryError) mysqlSeen = true;
    if (name === "MaxRetriesPerRequestError") return "redis";
    if (typeof message === "string" && REDIS_AWAY.some((pattern) => pattern.test(message))) return "redis";
    if (typeof message === "string" && MYSQL_CLOSED.test(message)) return "mysql";
    if (typeof code === "string" && CONNECTION_CODES.has(code) && (mysqlSeen || fatal === true)) return "mysql";
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
