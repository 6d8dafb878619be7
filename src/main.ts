import { ConfigError, loadConfig } from "./config/index.js";
import { createApp } from "./server/app.js";

async function main(): Promise<void> {
  const config = loadConfig(process.env);
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
    app.close().then(
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
