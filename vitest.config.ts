import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file gets its own server and database; two cores, so two files at a time.
    pool: "forks",
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "single",
          include: ["test/**/*.test.ts", "src/**/*.spec.ts", "gateway/**/*.spec.ts"],
          globalSetup: ["test/support/redis-global-setup.ts"],
        },
      },
      {
        // The search suite again, on a Redis Cluster of 3 masters (REDIS_CLUSTER_NODES).
        extends: true,
        test: {
          name: "cluster",
          include: ["test/search/**/*.test.ts"],
          globalSetup: ["test/support/redis-cluster-global-setup.ts"],
        },
      },
    ],
  },
});
