// Runs the README's shell examples (every ```sh block that calls the service with curl, buf curl or
// the CLI) verbatim, in README order, in one shell, against a test server with a real processing
// worker, and checks the output the README shows under a command. Only addresses change: the
// default ports become the test server's, and the placeholder image host (example.com) a loopback
// server with real photos.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheDir } from "../support/cache-dir.js";
import { serveBytes, startImageServer } from "../support/image-server.js";
import type { ImageServer } from "../support/image-server.js";
import { samplePhotos } from "../support/sample-photos.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";
import { promisedFragments, shellBlocks } from "./readme-commands.js";
import { startShellSession } from "./shell-session.js";
import type { ShellSession } from "./shell-session.js";

const README = readFileSync("README.md", "utf8");
const CALLS_THE_SERVICE = /\bcurl\b|npm run cli\b/;
/** Files the examples write into the working directory. */
const WRITTEN = ["products.csv"];

let server: TestServer;
let images: ImageServer;
let shell: ShellSession;
let substitutions: [string, string][];

beforeAll(async () => {
  for (const file of WRITTEN) if (existsSync(file)) throw new Error(`${file} exists in the checkout; the README examples would overwrite it`);
  images = await startImageServer();
  const photos = await samplePhotos(cacheDir);
  images.route("/1.jpg", serveBytes(photos.motorcycle_left, "image/png"));
  images.route("/2.jpg", serveBytes(photos.coffee, "image/png"));
  server = await startTestServer(
    { WORKERS: "1", CACHE_DIR: cacheDir, IMAGE_FETCH_ALLOW_PRIVATE: "true", PROCESSING_IDLE_POLL_MS: "100" },
    { generatedAdminKey: true },
  );
  const rest = new URL(server.restUrl);
  const grpc = new URL(server.grpcUrl);
  substitutions = [
    ["localhost:8080", `localhost:${rest.port}`],
    ["127.0.0.1:50051", `127.0.0.1:${grpc.port}`],
    ["https://example.com/", images.url("/")],
  ];
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: rest.port, DATA_DIR: server.config.dataDir };
  for (const name of ["ADMIN_API_KEY", "VITRINE_API_KEY", "ORG", "KEY", "ADMIN", "CAT", "KEY_ID", "B"]) delete env[name];
  // The harness's only addition: curl reports HTTP errors as failures (exit code 22), so an example
  // answering 4xx/5xx fails here instead of printing an error a reader might not notice.
  shell = startShellSession({ cwd: process.cwd(), env, prelude: "set -uo pipefail\ncurl() { command curl --fail-with-body -sS \"$@\"; }" });
}, 120_000);

afterAll(async () => {
  shell?.close();
  for (const file of WRITTEN) rmSync(file, { force: true });
  await server?.close();
  await images?.close();
});

const substitute = (text: string) => substitutions.reduce((t, [from, to]) => t.split(from).join(to), text);

describe("README examples", () => {
  const blocks = shellBlocks(README).filter((block) => block.commands.some((command) => CALLS_THE_SERVICE.test(command.text)));

  it("finds the examples: keys, catalogs, products, gRPC, Connect, CLI, search, reindex, health", () => {
    const all = blocks.flatMap((block) => block.commands.map((command) => command.text)).join("\n");
    for (const expected of ["/keys", "/catalogs", "/products", "npx buf curl", "vitrine.v1.CatalogService/ListCatalogs", "npm run cli -- import", "/search", "/recs", "/reindex", "grpc.health.v1.Health/Check"]) {
      expect(all).toContain(expected);
    }
  });

  it("runs every one as written, each answering what the README shows", { timeout: 300_000 }, async () => {
    for (const block of blocks) {
      for (const command of block.commands) {
        const text = substitute(command.text);
        const result = await shell.run(text, 120_000);
        const where = `README line ${command.line}: ${command.text}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
        expect(result.exitCode, where).toBe(0);
        if (command.shown === undefined) continue;
        for (const fragment of promisedFragments(substitute(command.shown))) {
          expect(result.stdout.replace(/\s+(?=["{}[\],:])|(?<=["{}[\],:])\s+/g, ""), `${where}\nshown: ${command.shown}`).toContain(fragment);
        }
      }
    }
  });
});
