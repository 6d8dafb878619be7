// A deliberately tiny RESP2 client: provisioning must work before (and without) any Redis client
// library being installed, and only needs PING / INFO / VCARD / SHUTDOWN style request-reply calls.
import net from "node:net";

export type RespValue = string | number | null | RespError | RespValue[];

// Error replies are returned as values, not thrown: callers inspect them ("unknown command").
export class RespError {
  constructor(readonly message: string) {}
}

export interface RespConnection {
  call(args: readonly string[]): Promise<RespValue>;
  close(): void;
}

export class RespProtocolError extends Error {}

type Parsed = { value: RespValue; next: number } | undefined;

// Returns undefined when the buffer does not yet hold a complete reply.
function parseReply(buf: Buffer, pos: number): Parsed {
  const lineEnd = buf.indexOf("\r\n", pos);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buf[pos] ?? 0);
  const line = buf.toString("utf8", pos + 1, lineEnd);
  const after = lineEnd + 2;
  switch (type) {
    case "+":
      return { value: line, next: after };
    case "-":
      return { value: new RespError(line), next: after };
    case ":":
      return { value: Number(line), next: after };
    case "$": {
      const len = Number(line);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return undefined;
      return { value: buf.toString("utf8", after, after + len), next: after + len + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let cursor = after;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, cursor);
        if (!item) return undefined;
        items.push(item.value);
        cursor = item.next;
      }
      return { value: items, next: cursor };
    }
    default:
      // Something that is not Redis is listening (HTTP server, another protocol...).
      throw new RespProtocolError(
        `not a RESP reply (first bytes: ${JSON.stringify(buf.toString("latin1", pos, pos + 40))})`,
      );
  }
}

function encode(args: readonly string[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const data = Buffer.from(arg, "utf8");
    parts.push(Buffer.from(`$${data.length}\r\n`), data, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

export function connectResp(opts: { host: string; port: number; timeoutMs: number }): Promise<RespConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: opts.host, port: opts.port });
    let buffer: Buffer = Buffer.alloc(0);
    // One call at a time is all provisioning needs; a queue would be dead weight.
    let pending: { resolve: (v: RespValue) => void; reject: (e: Error) => void } | undefined;
    let failure: Error | undefined;

    let connected = false;
    const fail = (err: Error) => {
      failure ??= err;
      if (!connected) reject(err);
      const p = pending;
      pending = undefined;
      p?.reject(err);
      socket.destroy();
    };

    socket.setTimeout(opts.timeoutMs, () => fail(new Error(`no answer from ${opts.host}:${opts.port} within ${opts.timeoutMs} ms`)));
    socket.on("error", fail);
    socket.on("close", () => fail(new Error(`connection to ${opts.host}:${opts.port} closed`)));
    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      if (!pending) return;
      let parsed: Parsed;
      try {
        parsed = parseReply(buffer, 0);
      } catch (err) {
        fail(err as Error);
        return;
      }
      if (!parsed) return;
      buffer = buffer.subarray(parsed.next);
      const p = pending;
      pending = undefined;
      p.resolve(parsed.value);
    });

    socket.once("connect", () => {
      connected = true;
      resolve({
        call(args) {
          if (failure) return Promise.reject(failure);
          if (pending) return Promise.reject(new Error("RESP call already in flight"));
          return new Promise<RespValue>((res, rej) => {
            pending = { resolve: res, reject: rej };
            socket.write(encode(args));
          });
        },
        close() {
          socket.destroy();
        },
      });
    });
  });
}
