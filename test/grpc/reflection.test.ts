import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { create, createFileRegistry, getOption, hasOption } from "@bufbuild/protobuf";
import type { DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../../src/gen/google/api/annotations_pb.js";
import { ServerReflection } from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1Alpha } from "../../src/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

const run = promisify(execFile);
let server: TestServer;
let address: string;

beforeAll(async () => {
  server = await startTestServer();
  address = server.grpcUrl.replace("localhost", "127.0.0.1");
});
afterAll(() => server?.close());

/** `buf curl` as a user runs it: no --schema, so everything it knows comes from reflection. */
async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run("node_modules/.bin/buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], { timeout: 30_000 });
  return stdout;
}

describe("gRPC server reflection", () => {
  it("lets buf curl list every method without .proto files", async () => {
    const methods = (await bufCurl("--list-methods", address)).trim().split("\n");
    for (const method of [
      "vitrine.v1.CatalogService/ListCatalogs",
      "vitrine.v1.ProductService/CreateProducts",
      "vitrine.v1.SearchService/SearchProducts",
      "vitrine.v1.RecommendationService/GetRecommendations",
      "vitrine.v1.ApiKeyService/CreateApiKey",
      "grpc.health.v1.Health/Watch",
      "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
      "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    ]) {
      expect(methods).toContain(method);
    }
  });

  it("lets buf curl call RPCs with no schema: JSON in and out through the reflected descriptors", async () => {
    expect(JSON.parse(await bufCurl("-d", '{"service":""}', `${address}/grpc.health.v1.Health/Check`))).toEqual({ status: "SERVING" });
    const org = randomUUID();
    const key = await server.createKey(org);
    const created = JSON.parse(
      await bufCurl("-H", `service_api_key: ${key}`, "-d", JSON.stringify({ organizationId: org, name: "reflected" }), `${address}/vitrine.v1.CatalogService/CreateCatalog`),
    );
    expect(created.catalog).toMatchObject({ name: "reflected", organizationId: org });
  });

  for (const [version, service] of [
    ["v1", ServerReflection],
    ["v1alpha", ServerReflectionV1Alpha],
  ] as const) {
    it(`describes a service over ${version}: its file and imports, with methods, types and options`, async () => {
      const client = createClient(service as DescService as typeof ServerReflection, createGrpcTransport({ baseUrl: server.grpcUrl }));
      const requests = async function* () {
        yield { messageRequest: { case: "fileContainingSymbol" as const, value: "vitrine.v1.SearchService.SearchProducts" } };
        yield { messageRequest: { case: "fileContainingSymbol" as const, value: "vitrine.v1.NoSuchThing" } };
        yield { messageRequest: { case: "fileByFilename" as const, value: "vitrine/v1/common.proto" } };
      };
      const answers = [];
      for await (const answer of client.serverReflectionInfo(requests())) answers.push(answer);
      expect(answers).toHaveLength(3);

      const first = answers[0]!.messageResponse;
      expect(first.case).toBe("fileDescriptorResponse");
      const files = (first.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
      expect(files[0]!.name).toBe("vitrine/v1/search_service.proto");
      // The answer carries every import, so a client can build the whole schema from it.
      const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: importsFirst(files) }));
      const search = registry.getService("vitrine.v1.SearchService")!;
      const method = search.methods.find((m) => m.name === "SearchProducts")!;
      expect(method.input.typeName).toBe("vitrine.v1.SearchProductsRequest");
      expect(method.input.fields.map((f) => f.name)).toContain("filters");
      expect(hasOption(method, http)).toBe(true);
      expect(getOption(method, http).pattern).toMatchObject({ case: "post", value: "/search" });

      expect(answers[1]!.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
      // common.proto went out above as an import; asked for by name it is sent again.
      const third = answers[2]!.messageResponse.value as { fileDescriptorProto: Uint8Array[] };
      expect(fromBinary(FileDescriptorProtoSchema, third.fileDescriptorProto[0]!).name).toBe("vitrine/v1/common.proto");
    });
  }
});

/** protobuf-es builds a registry from a set whose files come after their imports. */
function importsFirst<T extends { name: string; dependency: string[] }>(files: T[]): T[] {
  const ordered: T[] = [];
  const placed = new Set<string>();
  while (ordered.length < files.length) {
    const ready = files.filter((file) => !placed.has(file.name) && file.dependency.every((name) => placed.has(name)));
    if (ready.length === 0) throw new Error("the answer lacks an import");
    for (const file of ready) {
      ordered.push(file);
      placed.add(file.name);
    }
  }
  return ordered;
}
