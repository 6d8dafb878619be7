import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.spec.ts", "gateway/**/*.spec.ts"],
    globalSetup: ["test/support/redis-global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file gets its own server and database; two cores, so two files at a time.
    pool: "forks",
    maxWorkers: 2,
  },
});
