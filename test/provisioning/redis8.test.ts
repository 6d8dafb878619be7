import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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

  it("reuses only a Redis its data directory started: another's is refused, or avoided on a free port when movable", { timeout: 60_000 }, async () => {
    // `redis` (first test) is another installation's Redis 8 as far as this data directory knows.
    const mine = mkdtempSync(join(tmpdir(), "vitrine-redis8-mine-"));
    const started: ProvisionedRedis[] = [];
    try {
      await expect(provisionRedis8({ cacheDir, port, dataDir: mine })).rejects.toThrow(/this installation did not start \(its data is in .*\).*REDIS_URL/);

      const moved = await provisionRedis8({ cacheDir, port, dataDir: mine, movable: true });
      started.push(moved);
      expect(moved.startedByUs).toBe(true);
      expect(moved.port).not.toBe(port);
      expect(readFileSync(join(mine, "port"), "utf8").trim()).toBe(String(moved.port));

      // A worker with the same data directory finds that one, not the foreign one on the preferred port.
      const again = await provisionRedis8({ cacheDir, port, dataDir: mine, movable: true });
      expect(again).toMatchObject({ startedByUs: false, port: moved.port });
      const conn = await connectResp({ host: "127.0.0.1", port: moved.port, timeoutMs: 2000 });
      expect(await conn.call(["VCARD", "v"])).toBe(0);
      conn.close();
    } finally {
      for (const r of started) await r.stop();
      rmSync(mine, { recursive: true, force: true });
    }
  });
});
