import { ConfigError, loadConfig } from "./config/index.js";
import pino from "pino";
import { createApp } from "./server/app.js";
import { resolveRedisUrl } from "./server/redis-url.js";

async function main(): Promise<void> {
  const configured = loadConfig(process.env);
  const redis = await resolveRedisUrl(configured, pino({ level: configured.logLevel }));
  // Workers forked by the service get this configuration, so they use the same Redis.
  const config = { ...configured, redis: { ...configured.redis, url: redis.url } };
  const app = await createApp(config);
  const { restUrl, grpcUrl } = await app.listen();
  app.rest.log.info({ restUrl, grpcUrl }, "vitrine is serving");

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
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error("vitrine failed to start:", error);
  }
  process.exit(1);
});
