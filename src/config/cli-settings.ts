/** What the `vitrine` CLI reads from its environment. */
export interface CliSettings {
  /** The service's REST port on this host (PORT), for the default --url. */
  port: string;
  /** The service's DATA_DIR, where a generated admin key is kept. */
  dataDir: string;
  adminApiKey: string | undefined;
  /** VITRINE_API_KEY: an organization key, when --api-key is not given. */
  apiKey: string | undefined;
}

export function loadCliSettings(env: Record<string, string | undefined>): CliSettings {
  return {
    port: env.PORT || "8080",
    dataDir: env.DATA_DIR || ".data",
    adminApiKey: env.ADMIN_API_KEY || undefined,
    apiKey: env.VITRINE_API_KEY || undefined,
  };
}
