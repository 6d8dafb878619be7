// The architecture's rules, checked on the source itself: configuration is read in one place, and
// the core (one folder per concern) knows nothing of HTTP, RPC, the storage engines or the apps.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => join(folder, file));
}

const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

/** The modules a source file imports or re-exports (multi-line statements included). */
function importsOf(text: string): string[] {
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)].map((match) => match[1]!);
}

describe("layout", () => {
  it("reads process.env only in src/config", () => {
    const files = [...sources("src"), ...sources("gateway")].filter((file) => !file.startsWith(join("src", "gen")));
    expect(files.length).toBeGreaterThan(100);
    const readers = files.filter((file) => /\bprocess\.env\b/.test(read(file))).map((file) => relative(ROOT, join(ROOT, file)));
    expect(readers.every((file) => file.startsWith(join("src", "config")))).toBe(true);
    // And it does read it there: the check looks at the right text.
    expect(readers).toContain(join("src", "config", "environment.ts"));
  });

  it("keeps the core free of HTTP, RPC, storage engines and the apps", () => {
    // Colocated specs excepted: safe-error.spec.ts makes real driver errors to check their logging.
    const core = ["catalogs", "search", "processing", "embeddings", "auth", "errors", "logging"]
      .flatMap((concern) => sources(join("src", concern)))
      .filter((file) => !file.endsWith(".spec.ts"));
    expect(core.length).toBeGreaterThan(50);
    const outward = /^(fastify|@fastify\/.*|@connectrpc\/.*|@grpc\/.*|mysql2(\/.*)?|drizzle-orm(\/.*)?|ioredis)$|^[./]*\/(storage|apps|rpc|operations|gen)\//;
    const offenders = core.flatMap((file) => importsOf(read(file)).filter((module) => outward.test(module)).map((module) => `${file}: ${module}`));
    expect(offenders).toEqual([]);
  });

  it("keeps the gateway generic: it knows google.api.http, not the service's own options", () => {
    const offenders = sources("gateway").filter((file) => !file.endsWith(".spec.ts") && /gen\/vitrine\//.test(read(file)));
    expect(offenders).toEqual([]);
  });
});
