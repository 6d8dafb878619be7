import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Server } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { createSecureContext } from "node:tls";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createImageFetcher, ImageFetchError } from "../../../src/processing/fetch/index.js";

// The fetcher trusts only the system CAs, so a loopback HTTPS server cannot serve it an image;
// what can be checked is that https goes through TLS with the URL's name as SNI even though the
// connection is pinned to a pre-resolved address, and that TLS failures are permanent.
// A throwaway certificate is made at test time rather than committing a private key.
const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;

let tls: { key: Buffer; cert: Buffer } | undefined;
let dir: string | undefined;
beforeAll(() => {
  if (!hasOpenssl) return;
  dir = mkdtempSync(join(tmpdir(), "vitrine-fetch-tls-"));
  const result = spawnSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "2",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
  ]);
  if (result.status !== 0) throw new Error(`openssl failed: ${String(result.stderr)}`);
  tls = { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let server: Server | undefined;
afterEach(async () => {
  const current = server;
  server = undefined;
  if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
});

async function listen(created: Server): Promise<number> {
  server = created;
  await new Promise<void>((resolve) => created.listen(0, "127.0.0.1", resolve));
  return (created.address() as AddressInfo).port;
}

async function failure(promise: Promise<unknown>): Promise<ImageFetchError> {
  const error = await promise.then(() => new Error("expected the download to fail"), (e: unknown) => e);
  expect(error).toBeInstanceOf(ImageFetchError);
  return error as ImageFetchError;
}

describe("https", () => {
  it.skipIf(!hasOpenssl)("sends the host name as SNI and refuses an untrusted certificate as permanent", async () => {
    const serverNames: string[] = [];
    let requests = 0;
    const context = createSecureContext({ ...tls });
    const https = createHttpsServer(
      {
        ...tls,
        SNICallback: (name, callback) => {
          serverNames.push(name);
          callback(null, context);
        },
      },
      (_request, response) => {
        requests += 1;
        response.end();
      },
    );
    const port = await listen(https);
    const fetcher = createImageFetcher({ allowPrivateAddresses: true });

    const byName = await failure(fetcher(`https://localhost:${port}/a.png`));
    expect(byName.kind).toBe("permanent");
    expect(byName.message).toMatch(/^could not establish a secure connection to localhost \(/);
    expect(serverNames).toEqual(["localhost"]);

    // TLS forbids IP addresses as server names, so none is sent for a literal.
    const byAddress = await failure(fetcher(`https://127.0.0.1:${port}/a.png`));
    expect(byAddress.kind).toBe("permanent");
    expect(serverNames).toEqual(["localhost"]);
    expect(requests).toBe(0);
  });

  it("refuses https to a server that does not speak TLS, as permanent", async () => {
    const port = await listen(createHttpServer((_request, response) => response.end("plain")));
    const error = await failure(createImageFetcher({ allowPrivateAddresses: true })(`https://127.0.0.1:${port}/a.png`));
    expect(error.kind).toBe("permanent");
    expect(error.message).toMatch(/^could not establish a secure connection to 127\.0\.0\.1/);
  });
});
