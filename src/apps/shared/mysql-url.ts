import { join } from "node:path";
import type { Config } from "../../config/index.js";
import type { Logger } from "../../logging/index.js";
import { probeMysql, provisionMariadb } from "../../provisioning/index.js";

/** Where `npm start` and `npm run worker` run their own MariaDB when MYSQL_URL is unset and 3306 is silent. */
export const PROVISIONED_MYSQL_PORT = 3307;
/** The default MYSQL_URL: the usual local server. */
export const DEFAULT_MYSQL_PORT = 3306;

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * MYSQL_URL when it was set (nothing is started). Otherwise the server on 127.0.0.1:3306 when
 * root can log in to it; else a MariaDB of the service's own on port 3307: one already running
 * there is reused, else one is started (from PATH, or fetched from Debian's archive into the
 * cache), keeping its data under DATA_DIR/mysql.
 */
export async function resolveMysqlUrl(config: Config, log: Logger): Promise<{ url: string; stop(): Promise<void> }> {
  const none = async () => undefined;
  if (config.mysqlUrlSet) return { url: config.mysqlUrl, stop: none };
  const database = decodeURIComponent(new URL(config.mysqlUrl).pathname.replace(/^\//, "")) || "vitrine";
  const local = await probeMysql("127.0.0.1", DEFAULT_MYSQL_PORT);
  if (local.kind === "mysql") return { url: config.mysqlUrl, stop: none };
  const dataDir = join(config.dataDir, "mysql");
  let server;
  try {
    server = await provisionMariadb({ cacheDir: config.cacheDir, port: PROVISIONED_MYSQL_PORT, dataDir });
  } catch (err) {
    const why = local.kind === "free" ? "nothing answers on 127.0.0.1:3306" : `127.0.0.1:3306 did not let root in (${local.error})`;
    throw new Error(
      `MYSQL_URL is not set and ${why}, and no MariaDB of our own could be started: ${(err as Error).message}\n` +
        `Set MYSQL_URL to a MySQL/MariaDB server (e.g. mysql://user:password@host:3306/vitrine), or install MariaDB (apt-get install mariadb-server).`,
      { cause: err },
    );
  }
  const url = withDatabase(server.url, database);
  const why = local.kind === "free" ? "nothing answers on 127.0.0.1:3306" : "127.0.0.1:3306 does not let root in";
  log.info(
    { mysqlUrl: url, version: server.version, dataDir: server.startedByUs ? dataDir : undefined },
    server.startedByUs
      ? `MYSQL_URL is not set and ${why}: started MariaDB ${server.version} at ${url}`
      : `MYSQL_URL is not set and ${why}: using the MariaDB ${server.version} already at ${url}`,
  );
  return { url, stop: () => server.stop() };
}
