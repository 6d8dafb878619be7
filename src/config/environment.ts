// The one module that reads process.env. Entry points load their configuration through it;
// everything below them receives the validated values. Child processes (forked workers, the
// provisioned servers, apt-get) inherit the environment through childEnvironment.
import { delimiter, join } from "node:path";
import { loadCliSettings } from "./cli-settings.js";
import type { CliSettings } from "./cli-settings.js";
import { loadConfig } from "./config.js";
import type { Config } from "./config.js";

/** The serialised, already-validated configuration a worker forked by the service runs with. */
const WORKER_CONFIG_ENV = "VITRINE_WORKER_CONFIG";

/** The API process's configuration, from its environment. */
export function serviceConfig(): Config {
  return loadConfig(process.env);
}

/**
 * A worker process's configuration: its service's, verbatim, when the service forked it (MySQL and
 * Redis already resolved); else, run by hand, its environment.
 */
export function workerConfig(): { config: Config; forked: boolean } {
  const forwarded = process.env[WORKER_CONFIG_ENV];
  return forwarded ? { config: JSON.parse(forwarded) as Config, forked: true } : { config: loadConfig(process.env), forked: false };
}

/** The environment of a worker the service forks: its own, plus the configuration it runs with. */
export function forkedWorkerEnvironment(config: Config): NodeJS.ProcessEnv {
  return childEnvironment({ [WORKER_CONFIG_ENV]: JSON.stringify(config) });
}

/** The `vitrine` CLI's settings, from its environment. */
export function cliSettings(): CliSettings {
  return loadCliSettings(process.env);
}

/** The cache folder as the service would choose it (CACHE_DIR, else XDG_CACHE_HOME/vitrine), for the provisioning scripts. */
export function cacheDirFromEnvironment(): string {
  return loadConfig({ CACHE_DIR: process.env.CACHE_DIR, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME }).cacheDir;
}

/** PATH's folders, in order. */
export function executableSearchPath(): string[] {
  return (process.env.PATH ?? "").split(delimiter).filter(Boolean);
}

/**
 * The environment a child process starts with: this process's, with `changes` applied (undefined
 * removes a variable).
 */
export function childEnvironment(changes: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Where the generated admin key is kept: the service writes it, the CLI reads it. */
export function adminKeyPath(dataDir: string): string {
  return join(dataDir, "admin-api-key");
}
