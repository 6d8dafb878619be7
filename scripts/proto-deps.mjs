// Copies the googleapis HTTP annotation protos out of the npm package `google-proto-files`
// into .build/proto-deps, the second module of buf.yaml. The buf.build registry is out of
// reach on our machines, and vendoring third-party protos into the repo would go stale.
import { cpSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const source = dirname(require.resolve("google-proto-files/package.json"));
const target = join(process.cwd(), ".build", "proto-deps", "google", "api");
mkdirSync(target, { recursive: true });
for (const file of ["annotations.proto", "http.proto"]) {
  cpSync(join(source, "google", "api", file), join(target, file));
}
