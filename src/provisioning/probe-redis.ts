// Classifies whatever listens on a port, so provisioning can reuse a suitable server and refuse,
// with a precise message, to fight over a port held by something else.
import { connectResp, RespError } from "./resp-client.js";

export type ProbeResult =
  | { kind: "free" }
  | { kind: "redis"; version: string; vectorSets: boolean }
  | { kind: "other"; detail: string };

export function majorVersion(version: string): number {
  const major = Number.parseInt(version.split(".")[0] ?? "", 10);
  return Number.isFinite(major) ? major : 0;
}

export function isUsableRedis8(probe: ProbeResult): probe is { kind: "redis"; version: string; vectorSets: true } {
  return probe.kind === "redis" && majorVersion(probe.version) >= 8 && probe.vectorSets;
}

export function describeProbe(probe: ProbeResult): string {
  switch (probe.kind) {
    case "free":
      return "nothing";
    case "redis":
      return `Redis ${probe.version} (${probe.vectorSets ? "with" : "without"} vector sets)`;
    case "other":
      return `something that is not a usable Redis (${probe.detail})`;
  }
}

export async function probeRedis(host: string, port: number, timeoutMs = 2000): Promise<ProbeResult> {
  let conn;
  try {
    conn = await connectResp({ host, port, timeoutMs });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ECONNREFUSED") return { kind: "free" };
    return { kind: "other", detail: `connect failed: ${(err as Error).message}` };
  }
  try {
    const info = await conn.call(["INFO", "server"]);
    if (info instanceof RespError) return { kind: "other", detail: `INFO server answered "${info.message}"` };
    if (typeof info !== "string") return { kind: "other", detail: "INFO server gave an unexpected reply" };
    const version = /^redis_version:(\S+)/m.exec(info)?.[1];
    if (!version) return { kind: "other", detail: "INFO server has no redis_version" };
    // VCARD on a key that need not exist: only the "unknown command" error matters, any other
    // reply (0, WRONGTYPE...) proves the vector-set commands are compiled in.
    const vcard = await conn.call(["VCARD", "__vitrine_provision_probe__"]);
    const vectorSets = !(vcard instanceof RespError && /unknown command/i.test(vcard.message));
    return { kind: "redis", version, vectorSets };
  } catch (err) {
    return { kind: "other", detail: (err as Error).message };
  } finally {
    conn.close();
  }
}

export async function pingRedis(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  try {
    const conn = await connectResp({ host, port, timeoutMs });
    try {
      return (await conn.call(["PING"])) === "PONG";
    } finally {
      conn.close();
    }
  } catch {
    return false;
  }
}

// The pid a Redis reports for itself: tells our own child apart from another server that won a race
// for the same port.
export async function redisProcessId(host: string, port: number, timeoutMs = 1000): Promise<number | undefined> {
  try {
    const conn = await connectResp({ host, port, timeoutMs });
    try {
      const info = await conn.call(["INFO", "server"]);
      const pid = typeof info === "string" ? /^process_id:(\d+)/m.exec(info)?.[1] : undefined;
      return pid ? Number(pid) : undefined;
    } finally {
      conn.close();
    }
  } catch {
    return undefined;
  }
}

// The data directory a Redis reports for itself (CONFIG GET dir): a provisioned Redis is started
// with `--dir <its data directory>`, so this tells the server an installation started from one
// that only happens to listen on the same port. Undefined when it will not say.
export async function redisDataDir(host: string, port: number, timeoutMs = 1000): Promise<string | undefined> {
  try {
    const conn = await connectResp({ host, port, timeoutMs });
    try {
      const reply = await conn.call(["CONFIG", "GET", "dir"]);
      return Array.isArray(reply) && typeof reply[1] === "string" ? reply[1] : undefined;
    } finally {
      conn.close();
    }
  } catch {
    return undefined;
  }
}
