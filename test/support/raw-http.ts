import { connect } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes as they are over a fresh TCP connection and reads the answer until the server
 * closes it: for requests fetch refuses to send (NUL or raw bytes in the request line, bare
 * spaces, oversize URLs).
 */
export function rawRequest(baseUrl: string, bytes: Buffer | string): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer within 10 s")));
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      const head = split === -1 ? text : text.slice(0, split);
      const [statusLine = "", ...headerLines] = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body = split === -1 ? "" : text.slice(split + 4);
      if (headers["transfer-encoding"] === "chunked") body = unchunk(body);
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body });
    });
    socket.end(bytes);
  });
}

function unchunk(body: string): string {
  let out = "";
  let rest = body;
  for (;;) {
    const lineEnd = rest.indexOf("\r\n");
    if (lineEnd === -1) return out;
    const size = parseInt(rest.slice(0, lineEnd), 16);
    if (!size) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 4 + size);
  }
}
