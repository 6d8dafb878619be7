import { randomUUID } from "node:crypto";
import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { errorObject } from "../../../gateway/index.js";

/** Longest request target echoed in a parser error's Error object (the rest is cut). */
export const CLIENT_ERROR_URL_LENGTH = 1024;

const REQUEST_LINE = /^([A-Za-z]{1,20}) (\S*)/;

/**
 * Answers what Node's HTTP parser refuses before any route exists (oversize URL or headers, NUL,
 * bare spaces or raw bytes in the request line) with the documented Error object, instead of
 * Fastify's own body. Method and URL are read back from the bytes the parser saw, as far as they
 * can be.
 */
export function answerClientError(clientError: Error, socket: Socket): void {
  // Node's clientError carries the parser's code and the bytes it choked on.
  const error = clientError as Error & { code?: string; rawPacket?: unknown };
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket : Buffer.alloc(0);
  const requestLine = REQUEST_LINE.exec(packet.subarray(0, CLIENT_ERROR_URL_LENGTH + 32).toString("latin1"));
  const lineEnd = packet.indexOf("\r\n");
  const requestLineLength = lineEnd === -1 ? packet.length : lineEnd;
  const method = requestLine?.[1] ?? "";
  const url = (requestLine?.[2] ?? "").slice(0, CLIENT_ERROR_URL_LENGTH);
  const { status, message } = describe(error.code, requestLine !== null && requestLineLength >= maxHeaderSize);
  const body = JSON.stringify(errorObject({ method, url }, status, message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
      "content-type: application/json; charset=utf-8\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${randomUUID()}\r\n` +
      "connection: close\r\n\r\n" +
      body,
  );
}

function describe(code: string | undefined, requestLineOverflows: boolean): { status: number; message: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      // The parser's limit covers request line and headers together (16 KB): when the request
      // line alone did not fit, the URL is what is too long.
      return requestLineOverflows
        ? { status: 414, message: "the URL is too long: request line and headers together must fit in 16 KB" }
        : { status: 431, message: "the request headers are too large: request line and headers together must fit in 16 KB" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, message: "the request was not received in time" };
    case "HPE_INVALID_METHOD":
      return { status: 400, message: "malformed request: unknown method" };
    default:
      return { status: 400, message: "malformed request: the request line or headers are not valid HTTP (no spaces, tabs, control or non-ASCII bytes in the URL)" };
  }
}
