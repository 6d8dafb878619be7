import { defineConfig } from "drizzle-kit";

// Only `drizzle-kit generate` uses this: migrations are committed and applied by the service at start-up.
export default defineConfig({
  dialect: "mysql",
  schema: "./src/storage/mysql/schema.ts",
  out: "./src/storage/mysql/migrations",
});
