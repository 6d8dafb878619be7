// Copies third-party protos out of npm packages into .build/proto-deps, the second module of
// buf.yaml: the googleapis HTTP annotations from `google-proto-files`, and gRPC's standard health
// service (grpc.health.v1) from `grpc-health-check`, and gRPC's server reflection (grpc.reflection.v1 and
// v1alpha) from `@grpc/reflection`. The buf.build registry is out of reach on our
// machines, and vendoring third-party protos into the repo would go stale.
import { cpSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const target = join(process.cwd(), ".build", "proto-deps");

const googleProtos = dirname(require.resolve("google-proto-files/package.json"));
mkdirSync(join(target, "google", "api"), { recursive: true });
for (const file of ["annotations.proto", "http.proto"]) {
  cpSync(join(googleProtos, "google", "api", file), join(target, "google", "api", file));
}

// The package keeps it at proto/health/v1/; its canonical import path is grpc/health/v1/.
const healthProtos = dirname(require.resolve("grpc-health-check/package.json"));
mkdirSync(join(target, "grpc", "health", "v1"), { recursive: true });
cpSync(join(healthProtos, "proto", "health", "v1", "health.proto"), join(target, "grpc", "health", "v1", "health.proto"));

// Only the .proto files of `@grpc/reflection` are used: the service itself is built on Connect from the generated
// descriptors (src/rpc/reflection.ts).
const reflectionProtos = join(dirname(require.resolve("@grpc/reflection/package.json")), "build", "proto");
for (const version of ["v1", "v1alpha"]) {
  mkdirSync(join(target, "grpc", "reflection", version), { recursive: true });
  const file = join("grpc", "reflection", version, "reflection.proto");
  cpSync(join(reflectionProtos, file), join(target, file));
}
