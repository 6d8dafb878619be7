import { spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { connect } from "node:net";
import type { Socket } from "node:net";
import sharp from "sharp";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createImageFetcher, DEFAULT_IMAGE_FETCH_OPTIONS, ImageFetchError } from "../../../src/processing/fetch/index.js";
import type { ImageFetchOptions } from "../../../src/processing/fetch/index.js";
import { startLoopbackServer, streamBytes } from "./loopback-server.js";
import type { Handler, LoopbackServer } from "./loopback-server.js";

let jpeg: Buffer;
let png: Buffer;
const HTML = Buffer.from("<!doctype html><html><body>Sorry, this page is not available. Try again later.</body></html>");

beforeAll(async () => {
  const base = sharp({ create: { width: 16, height: 12, channels: 3, background: { r: 200, g: 40, b: 90 } } });
  jpeg = await base.clone().jpeg().toBuffer();
  png = await base.clone().png().toBuffer();
});

let server: LoopbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(routes: Record<string, Handler>): Promise<LoopbackServer> {
  server = await startLoopbackServer(routes);
  return server;
}

const fetcher = (options: Partial<ImageFetchOptions> = {}) =>
  createImageFetcher({ allowPrivateAddresses: true, ...options });

const sendBody =
  (body: Buffer, contentType?: string, status = 200): Handler =>
  (_request, response) => {
    response.writeHead(status, contentType ? { "Content-Type": contentType } : {});
    response.end(body);
  };

const redirect =
  (location: string, status = 302): Handler =>
  (_request, response) => {
    response.writeHead(status, { Location: location }).end();
  };

/** Runs the promise and returns its ImageFetchError, failing the test if it resolved or threw something else. */
async function failure(promise: Promise<unknown>): Promise<ImageFetchError> {
  const error = await promise.then(
    () => {
      throw new Error("expected the download to fail");
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ImageFetchError);
  return error as ImageFetchError;
}

describe("createImageFetcher: successful downloads", () => {
  it("downloads a JPEG with its bytes, format and content type", async () => {
    const s = await serve({ "/a.jpg": sendBody(jpeg, "image/jpeg") });
    const image = await fetcher()(s.url("/a.jpg"));
    expect(image.format).toBe("jpeg");
    expect(image.contentType).toBe("image/jpeg");
    expect(image.bytes.equals(jpeg)).toBe(true);
    expect(image.finalUrl).toBe(s.url("/a.jpg"));
  });

  it("downloads a PNG and sends the expected request headers", async () => {
    let headers: Record<string, string | string[] | undefined> = {};
    const s = await serve({
      "/a.png": (request, response) => {
        headers = request.headers;
        sendBody(png, "image/png; charset=binary")(request, response);
      },
    });
    const image = await fetcher()(s.url("/a.png?size=large"));
    expect(image.format).toBe("png");
    expect(image.contentType).toBe("image/png");
    expect(image.bytes.equals(png)).toBe(true);
    expect(headers["user-agent"]).toBe(DEFAULT_IMAGE_FETCH_OPTIONS.userAgent);
    expect(headers["accept-encoding"]).toBe("identity");
    expect(headers.host).toBe(`127.0.0.1:${s.port}`);
    expect(s.requests).toEqual(["/a.png?size=large"]);
  });

  it("lets the magic bytes decide when the server says application/octet-stream", async () => {
    const s = await serve({ "/blob": sendBody(png, "application/octet-stream") });
    const image = await fetcher()(s.url("/blob"));
    expect(image.format).toBe("png");
    expect(image.contentType).toBe("image/png");
  });

  it("accepts a response with no content type at all when the bytes are an image", async () => {
    const s = await serve({ "/raw": sendBody(jpeg) });
    expect((await fetcher()(s.url("/raw"))).format).toBe("jpeg");
  });

  it("connects to localhost by name, with the Host header keeping the name", async () => {
    let host: string | undefined;
    const s = await serve({
      "/a.png": (request, response) => {
        host = request.headers.host;
        sendBody(png, "image/png")(request, response);
      },
    });
    const image = await fetcher()(`http://localhost:${s.port}/a.png`);
    expect(image.format).toBe("png");
    expect(host).toBe(`localhost:${s.port}`);
  });

  it("follows two redirects (relative and absolute) and reports the final URL", async () => {
    const s = await serve({
      "/start": redirect("/middle", 301),
      "/middle": (request, response) => redirect(`http://127.0.0.1:${s.port}/final.jpg`, 307)(request, response),
      "/final.jpg": sendBody(jpeg, "image/jpeg"),
    });
    const image = await fetcher()(s.url("/start"));
    expect(image.format).toBe("jpeg");
    expect(image.finalUrl).toBe(s.url("/final.jpg"));
    expect(s.requests).toEqual(["/start", "/middle", "/final.jpg"]);
  });
});

describe("createImageFetcher: redirects", () => {
  it("refuses a redirect loop as permanent", async () => {
    const s = await serve({ "/a": redirect("/b"), "/b": redirect("/a") });
    const error = await failure(fetcher()(s.url("/a")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe(`redirect loop at ${s.url("/a")}`);
    expect(s.requests).toEqual(["/a", "/b"]);
  });

  it("refuses more than maxRedirects hops as permanent", async () => {
    const s = await serve({
      "/1": redirect("/2"),
      "/2": redirect("/3"),
      "/3": redirect("/4"),
      "/4": redirect("/5"),
      "/5": sendBody(png, "image/png"),
    });
    const error = await failure(fetcher()(s.url("/1")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe(`too many redirects (4), last: ${s.url("/5")}`);
    expect(s.requests).toEqual(["/1", "/2", "/3", "/4"]);
  });

  it("refuses a redirect without Location, and one to another scheme", async () => {
    const s = await serve({
      "/nowhere": (_request, response) => response.writeHead(302).end(),
      "/file": redirect("file:///etc/passwd"),
    });
    const nowhere = await failure(fetcher()(s.url("/nowhere")));
    expect(nowhere.kind).toBe("permanent");
    expect(nowhere.message).toMatch(/redirected \(302\) without saying where to/);
    const file = await failure(fetcher()(s.url("/file")));
    expect(file.kind).toBe("permanent");
    expect(file.message).toMatch(/unsupported URL scheme "file"/);
  });
});

describe("createImageFetcher: HTTP status", () => {
  it("treats 404 as permanent", async () => {
    const s = await serve({});
    const error = await failure(fetcher()(s.url("/missing.jpg")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe("image URL answered 404 Not Found");
  });

  it.each([
    [503, "image server answered 503 Service Unavailable"],
    [429, "image server answered 429 Too Many Requests"],
    [408, "image server answered 408 Request Timeout"],
    [500, "image server answered 500 Internal Server Error"],
  ])("treats %i as transient", async (status, message) => {
    const s = await serve({ "/x": sendBody(HTML, "text/html", status) });
    const error = await failure(fetcher()(s.url("/x")));
    expect(error.kind).toBe("transient");
    expect(error.message).toBe(message);
  });

  it("never repeats the server's own status text or body", async () => {
    const s = await serve({
      "/x": (_request, response) => {
        response.writeHead(403, "Go away, secret-token-123", { "Content-Type": "text/html" });
        response.end("internal stack trace secret-token-123");
      },
    });
    const error = await failure(fetcher()(s.url("/x")));
    expect(error.message).toBe("image URL answered 403 Forbidden");
  });
});

describe("createImageFetcher: content checks", () => {
  it("refuses an HTML page as permanent, without echoing it", async () => {
    const s = await serve({ "/page": sendBody(HTML, "text/html; charset=utf-8") });
    const error = await failure(fetcher()(s.url("/page")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe("not an image (content-type text/html)");
  });

  it("refuses an HTML body labelled image/jpeg (magic mismatch) as permanent", async () => {
    const s = await serve({ "/fake.jpg": sendBody(HTML, "image/jpeg") });
    const error = await failure(fetcher()(s.url("/fake.jpg")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toMatch(/^not a supported image \(content-type image\/jpeg, but the data is not JPEG/);
    expect(error.message).not.toMatch(/Sorry|html>/);
  });

  it("refuses octet-stream whose bytes are not an image", async () => {
    const s = await serve({ "/blob": sendBody(HTML, "application/octet-stream") });
    const error = await failure(fetcher()(s.url("/blob")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe("not an image (content-type application/octet-stream)");
  });

  it("refuses an empty body as permanent", async () => {
    const s = await serve({ "/empty": sendBody(Buffer.alloc(0), "image/png") });
    const error = await failure(fetcher()(s.url("/empty")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe("image URL returned an empty body");
  });
});

describe("createImageFetcher: size limit", () => {
  const maxBytes = 256 * 1024;
  const total = 64 * 1024 * 1024;

  it.each([
    ["refuses a declared Content-Length over the limit before reading the body", true],
    ["aborts a chunked body without Content-Length once it passes the limit", false],
  ])("%s", async (_, declareLength) => {
    let streamed: Promise<{ written: number; clientClosedEarly: boolean }> | undefined;
    const s = await serve({
      "/big.png": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/png", ...(declareLength ? { "Content-Length": String(total) } : {}) });
        streamed = streamBytes(response, { total, chunkSize: 64 * 1024, head: png });
      },
    });
    const error = await failure(fetcher({ maxBytes })(s.url("/big.png")));
    expect(error.kind).toBe("permanent");
    expect(error.message).toBe("image is larger than 256 KiB");
    const result = await streamed;
    expect(result?.clientClosedEarly).toBe(true);
    expect(result?.written).toBeLessThan(total / 4);
  });

  it("says 20 MiB with the default limit", async () => {
    const s = await serve({
      "/huge.png": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/png", "Content-Length": String(21 * 1024 * 1024) });
        response.write(png);
      },
    });
    const error = await failure(fetcher()(s.url("/huge.png")));
    expect(error.message).toBe("image is larger than 20 MiB");
  });

  it("stops reading a huge non-image body after its first bytes", async () => {
    let streamed: Promise<{ written: number; clientClosedEarly: boolean }> | undefined;
    const s = await serve({
      "/page.jpg": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/jpeg" });
        streamed = streamBytes(response, { total, chunkSize: 64 * 1024, head: HTML });
      },
    });
    const error = await failure(fetcher({ maxBytes: total * 2 })(s.url("/page.jpg")));
    expect(error.kind).toBe("permanent");
    const result = await streamed;
    expect(result?.clientClosedEarly).toBe(true);
    expect(result?.written).toBeLessThan(total / 4);
  });
});

describe("createImageFetcher: timeouts and cancellation", () => {
  it("gives up as transient when the headers never come", async () => {
    const s = await serve({ "/silent": () => undefined });
    const started = Date.now();
    const error = await failure(fetcher({ totalTimeoutMs: 300 })(s.url("/silent")));
    const elapsed = Date.now() - started;
    expect(error.kind).toBe("transient");
    expect(error.message).toBe("timed out after 300 ms");
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_000);
  });

  it("gives up as transient when the body trickles in past the deadline", async () => {
    let closedAt = 0;
    const s = await serve({
      "/slow.png": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/png" });
        response.write(png.subarray(0, 8));
        const timer = setInterval(() => response.write(Buffer.alloc(16)), 40);
        response.once("close", () => {
          clearInterval(timer);
          closedAt = Date.now();
        });
      },
    });
    const started = Date.now();
    const error = await failure(fetcher({ totalTimeoutMs: 400 })(s.url("/slow.png")));
    const elapsed = Date.now() - started;
    expect(error.kind).toBe("transient");
    expect(error.message).toBe("timed out after 400 ms");
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(1_200);
    // The socket is torn down, not left trickling.
    await expect.poll(() => closedAt, { timeout: 1_000 }).toBeGreaterThan(0);
  });

  it("counts the deadline over all redirect hops together", async () => {
    const s = await serve({
      "/1": (request, response) => setTimeout(() => redirect("/2")(request, response), 150),
      "/2": (request, response) => setTimeout(() => redirect("/3")(request, response), 150),
      "/3": (request, response) => setTimeout(() => sendBody(png, "image/png")(request, response), 150),
    });
    const error = await failure(fetcher({ totalTimeoutMs: 350 })(s.url("/1")));
    expect(error.kind).toBe("transient");
    expect(error.message).toBe("timed out after 350 ms");
  });

  it("honours the caller's AbortSignal, as transient", async () => {
    const s = await serve({ "/silent": () => undefined });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const error = await failure(fetcher()(s.url("/silent"), controller.signal));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(error.kind).toBe("transient");
    expect(error.message).toBe("download was cancelled");
  });

  it("does not start when the signal is already aborted", async () => {
    const s = await serve({ "/a.png": sendBody(png, "image/png") });
    const error = await failure(fetcher()(s.url("/a.png"), AbortSignal.abort()));
    expect(error.kind).toBe("transient");
    expect(s.connections).toBe(0);
  });

  it("reports a refused connection as transient", async () => {
    const s = await serve({});
    const url = s.url("/a.png");
    await s.close();
    server = undefined;
    const error = await failure(fetcher()(url));
    expect(error.kind).toBe("transient");
    expect(error.message).toBe("127.0.0.1 refused the connection");
  });

  it("reports a connection reset mid-body as transient", async () => {
    const s = await serve({
      "/cut.png": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/png", "Content-Length": String(png.length) });
        response.write(png.subarray(0, 20), () => response.socket?.destroy());
      },
    });
    const error = await failure(fetcher()(s.url("/cut.png")));
    expect(error.kind).toBe("transient");
  });

  describe("connect timeout", () => {
    // A listener whose accept queue is full drops SYNs, so connecting hangs. Node accepts
    // eagerly and cannot model that, so a tiny python listener that never accepts does.
    let listener: ChildProcess | undefined;
    const fillers: Socket[] = [];
    afterEach(() => {
      for (const socket of fillers.splice(0)) socket.destroy();
      listener?.kill();
      listener = undefined;
    });
    const hasPython = spawnSync("python3", ["-c", "pass"]).status === 0;

    it.skipIf(!hasPython)("gives up as transient when the TCP connection cannot be established", async () => {
      listener = spawn("python3", [
        "-c",
        "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(20)",
      ]);
      const port = await new Promise<number>((resolve) =>
        listener?.stdout?.once("data", (data: Buffer) => resolve(Number(String(data).trim()))),
      );
      for (let i = 0; i < 3; i++) fillers.push(connect(port, "127.0.0.1").on("error", () => undefined));
      await new Promise((resolve) => setTimeout(resolve, 50));

      const started = Date.now();
      const error = await failure(fetcher({ connectTimeoutMs: 250 })(`http://127.0.0.1:${port}/a.png`));
      expect(error.kind).toBe("transient");
      expect(error.message).toBe("could not connect to 127.0.0.1 within 250 ms");
      expect(Date.now() - started).toBeLessThan(1_000);
    });
  });
});

describe("createImageFetcher: address and URL policy", () => {
  it.each([
    ["loopback IPv4 literal", (port: number) => `http://127.0.0.1:${port}/a.png`],
    ["localhost by name", (port: number) => `http://localhost:${port}/a.png`],
    ["loopback IPv6 literal", (port: number) => `http://[::1]:${port}/a.png`],
    ["IPv4-mapped IPv6 loopback", (port: number) => `http://[::ffff:127.0.0.1]:${port}/a.png`],
    ["decimal IPv4 loopback", (port: number) => `http://2130706433:${port}/a.png`],
  ])("refuses %s when private addresses are not allowed, without connecting", async (_name, makeUrl) => {
    const s = await serve({ "/a.png": sendBody(png, "image/png") });
    const error = await failure(createImageFetcher()(makeUrl(s.port)));
    expect(error.kind).toBe("permanent");
    expect(error.message).toMatch(/non-public address \(loopback\)/);
    expect(s.requests).toEqual([]);
    expect(s.connections).toBe(0);
  });

  it.each([
    ["ftp://example.com/a.png", /unsupported URL scheme "ftp"/],
    ["file:///etc/passwd", /unsupported URL scheme "file"/],
    ["data:image/png;base64,iVBORw0KGgo=", /unsupported URL scheme "data"/],
    ["javascript:alert(1)", /unsupported URL scheme "javascript"/],
    ["not a url", /not a valid URL/],
    ["http://user:secret@example.com/a.png", /must not contain a user name or password/],
    ["https://user@example.com/a.png", /must not contain a user name or password/],
  ])("refuses %s as permanent", async (url, message) => {
    const error = await failure(createImageFetcher()(url));
    expect(error.kind).toBe("permanent");
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain("secret");
  });

  it("refuses credentials in the URL even on an allowed address, without connecting", async () => {
    const s = await serve({ "/a.png": sendBody(png, "image/png") });
    const error = await failure(fetcher()(`http://u:p@127.0.0.1:${s.port}/a.png`));
    expect(error.kind).toBe("permanent");
    expect(s.connections).toBe(0);
  });

  it("rejects nonsensical options up front", () => {
    expect(() => createImageFetcher({ totalTimeoutMs: Number.NaN })).toThrow(RangeError);
    expect(() => createImageFetcher({ maxRedirects: -1 })).toThrow(RangeError);
  });
});
