import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { provisionRedis8 } from "../../src/provisioning/index.js";
import type { ProvisionedRedis } from "../../src/provisioning/index.js";
import { connectResp } from "../../src/provisioning/resp-client.js";
import { cacheDir } from "../support/cache-dir.js";

// The real thing: a Redis >= 8 from PATH, or Debian trixie's build fetched into the shared cache
// (about 10 MB, once per machine), started on a port of its own.
const port = 20000 + Math.floor(Math.random() * 20000);
const dataDir = mkdtempSync(join(tmpdir(), "vitrine-redis8-"));
let redis: ProvisionedRedis | undefined;

afterAll(async () => {
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("provisionRedis8", () => {
  it("starts a Redis 8 whose vector sets answer VADD and VSIM", { timeout: 180_000 }, async () => {
    redis = await provisionRedis8({ cacheDir, port, dataDir });
    expect(redis.startedByUs).toBe(true);
    expect(Number(redis.version.split(".")[0])).toBeGreaterThanOrEqual(8);
    expect(redis.url).toBe(`redis://127.0.0.1:${port}`);

    const conn = await connectResp({ host: "127.0.0.1", port, timeoutMs: 2000 });
    try {
      expect(await conn.call(["VADD", "v", "VALUES", "3", "1", "0", "0", "a"])).toBe(1);
      expect(await conn.call(["VADD", "v", "VALUES", "3", "0", "1", "0", "b"])).toBe(1);
      const reply = (await conn.call(["VSIM", "v", "VALUES", "3", "0.9", "0.1", "0", "WITHSCORES"])) as string[];
      expect(reply[0]).toBe("a");
      expect(Number(reply[1])).toBeGreaterThan(Number(reply[3]));
    } finally {
      conn.close();
    }
  });

  it("reuses the server already on the port instead of starting another", async () => {
    const again = await provisionRedis8({ cacheDir, port, dataDir });
    expect(again.startedByUs).toBe(false);
    await again.stop();
    const conn = await connectResp({ host: "127.0.0.1", port, timeoutMs: 2000 });
    expect(await conn.call(["VCARD", "v"])).toBe(2);
    conn.close();
  });

  it("refuses a port held by something that is not Redis 8, saying what to do", async () => {
    const squatter = createServer((socket) => socket.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const taken = (squatter.address() as AddressInfo).port;
    try {
      await expect(provisionRedis8({ cacheDir, port: taken, dataDir })).rejects.toThrow(/REDIS_URL/);
    } finally {
      squatter.close();
    }
  });
});
