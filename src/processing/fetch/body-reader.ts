import type { IncomingMessage } from "node:http";
import { formatBytes, permanent } from "./errors.js";

export interface BodyLimits {
  maxBytes: number;
  signal: AbortSignal;
  /** How many leading bytes `inspectHead` wants to see. */
  headBytes: number;
  /** Called once with the first bytes (or the whole body, if shorter); throw to stop reading. */
  inspectHead: (head: Buffer) => void;
}

/**
 * Reads a response body into memory, stopping as soon as it is known to be unwanted: over the
 * size limit, or not an image by its first bytes. Stopping destroys the socket, so a hostile
 * server cannot make us keep receiving.
 */
export async function readBody(response: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  const { signal } = limits;
  const onAbort = () => response.destroy(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  const chunks: Buffer[] = [];
  let total = 0;
  let inspected = false;
  try {
    signal.throwIfAborted();
    for await (const chunk of response as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > limits.maxBytes) throw permanent(`image is larger than ${formatBytes(limits.maxBytes)}`);
      chunks.push(chunk);
      if (!inspected && total >= limits.headBytes) {
        inspected = true;
        limits.inspectHead(Buffer.concat(chunks, total));
      }
    }
    const body = Buffer.concat(chunks, total);
    if (!inspected && total > 0) limits.inspectHead(body);
    return body;
  } catch (error) {
    response.destroy();
    throw error;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
