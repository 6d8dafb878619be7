// Foreground entry for scripts and CI: `npx tsx src/provisioning/redis8-cli.ts [--port N] [--cache-dir D]`.
// Prints the URL on stdout (alone, so `$(...)` captures it) and keeps the server up until
// SIGINT/SIGTERM; progress goes to stderr.
import { cacheDirFromEnvironment } from "../config/index.js";
import { pingRedis } from "./probe-redis.js";
import { provisionRedis8 } from "./redis8.js";

function parseArgs(argv: string[]): { port?: number; cacheDir: string; dataDir?: string } {
  const out: { port?: number; cacheDir: string; dataDir?: string } = {
    cacheDir: cacheDirFromEnvironment(),
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if ((arg === "--port" || arg === "--cache-dir" || arg === "--data-dir") && value === undefined) {
      throw new Error(`${arg} needs a value`);
    }
    if (arg === "--port") out.port = Number(value);
    else if (arg === "--cache-dir") out.cacheDir = value as string;
    else if (arg === "--data-dir") out.dataDir = value;
    else if (arg === "--help" || arg === "-h") {
      process.stderr.write("usage: redis8-cli [--port N (6380)] [--cache-dir DIR ($CACHE_DIR, else $XDG_CACHE_HOME/vitrine or ~/.cache/vitrine)] [--data-dir DIR]\n");
      process.exit(0);
    } else throw new Error(`unknown argument ${arg} (try --help)`);
    i++;
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const log = (line: string) => process.stderr.write(`[redis8] ${line}\n`);
  const redis = await provisionRedis8({ ...args, log });
  process.stdout.write(`${redis.url}\n`);
  log(`Redis ${redis.version} at ${redis.url}${redis.startedByUs ? "" : " (already running, not ours to stop)"}; Ctrl-C to stop`);

  let exiting = false;
  const shutdown = async (code: number) => {
    if (exiting) return;
    exiting = true;
    await redis.stop();
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));

  // Signal handlers keep no event loop alive, and a server that died must not leave CI waiting on a
  // foreground process that looks healthy.
  let misses = 0;
  setInterval(() => {
    void pingRedis("127.0.0.1", redis.port, 2000).then((ok) => {
      misses = ok ? 0 : misses + 1;
      if (misses >= 3) {
        log(`Redis on port ${redis.port} stopped answering; exiting`);
        void shutdown(1);
      }
    });
  }, 5000);
}

main().catch((err: unknown) => {
  process.stderr.write(`[redis8] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
