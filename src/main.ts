import { createLogger } from "./logging/index.js";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "./config/index.js";
import type { Config } from "./config/index.js";
import { samplePhotos } from "./provisioning/index.js";
import { createApp } from "./server/app.js";
import { registerDemoPhotos, seedDemo } from "./server/demo.js";
import { resolveMysqlUrl } from "./server/mysql-url.js";
import { resolveRedisUrl } from "./server/redis-url.js";
import { StartupError } from "./server/startup-wait.js";

const USAGE = `usage: npm start [-- --demo]

  --demo   also create a demo organization, key and catalog of sample photos, and print the
           web page's address and the key (the demo's images are fetched from this service
           itself, so image fetching from private addresses is allowed in this mode)`;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { demo: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const configured = loadConfig(process.env);
  const log = createLogger({ level: configured.logLevel });
  const mysql = await resolveMysqlUrl(configured, log, Boolean(process.env.MYSQL_URL));
  const redis = await resolveRedisUrl(configured, log);
  // Workers forked by the service get this configuration, so they use the same MySQL and Redis.
  let config: Config = { ...configured, mysqlUrl: mysql.url, redis: { ...configured.redis, url: redis.url } };
  if (values.demo) config = { ...config, processing: { ...config.processing, allowPrivateImageHosts: true } };
  const photos = values.demo ? await samplePhotos(config.cacheDir) : undefined;
  const app = await createApp(config);
  if (photos) registerDemoPhotos(app.rest, photos);
  const { restUrl, grpcUrl } = await app.listen();
  app.rest.log.info({ restUrl, grpcUrl }, "vitrine is serving");
  if (values.demo) {
    const demo = await seedDemo(app.core, restUrl);
    console.log(
      `\nDemo ready: open ${restUrl}/ui\n  organization ${demo.organizationId}\n  API key      ${demo.key}\n  catalog      ${demo.catalogId}\n` +
        `The six products are processed in the background; the page shows their progress.\n`,
    );
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      app.rest.log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    app.rest.log.info({ signal }, "shutting down: finishing in-flight requests");
    app
      .close()
      .then(() => redis.stop())
      .then(() => mysql.stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          app.rest.log.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof StartupError) {
    console.error(error.message);
  } else {
    console.error("vitrine failed to start:", error);
  }
  process.exit(1);
});
