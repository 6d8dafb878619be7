// `npm start`: the API process (REST, Connect, gRPC-Web and gRPC), which forks the worker processes.
import { parseArgs } from "node:util";
import { serviceConfig } from "../../config/index.js";
import type { Config } from "../../config/index.js";
import { createLogger } from "../../logging/index.js";
import { samplePhotos } from "../../provisioning/index.js";
import { resolveMysqlUrl } from "../shared/mysql-url.js";
import { exitOnStartFailure, stopOnSignals } from "../shared/process-lifecycle.js";
import { resolveRedisUrl } from "../shared/redis-url.js";
import { createApiApp } from "./api-app.js";
import { registerDemoPhotos, seedDemo } from "./demo.js";

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
  const configured = serviceConfig();
  const log = createLogger({ level: configured.logLevel });
  const mysql = await resolveMysqlUrl(configured, log);
  const redis = await resolveRedisUrl(configured, log);
  // Workers forked by the service get this configuration, so they use the same MySQL and Redis.
  let config: Config = { ...configured, mysqlUrl: mysql.url, mysqlUrlSet: true, redis: { ...configured.redis, url: redis.url } };
  if (values.demo) config = { ...config, processing: { ...config.processing, allowPrivateImageHosts: true } };
  const photos = values.demo ? await samplePhotos(config.cacheDir) : undefined;
  const app = await createApiApp(config);
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

  stopOnSignals(
    async () => {
      await app.close();
      await redis.stop();
      await mysql.stop();
    },
    app.rest.log,
    "shutting down: finishing in-flight requests",
  );
}

main().catch(exitOnStartFailure);
