// What a gRPC call costs the server, by server implementation, with the service's own search
// messages and a handler that does no work (a fixed answer of 10 results with metadata, like a
// search's): so the figures are the transport's share of a gRPC search. Not a test: numbers.
//
//   npx tsx bench/grpc-servers.ts [--calls 6000] [--concurrency 8] [--servers fastify-connect,node-connect,grpc-js,vitrine-grpc-js,service-grpc,service-rest]
//                                 [--rounds 2] [--cpu-prof <dir>]   (V8 CPU profiles of the servers)
//                                 [--server-flags="--max-semi-space-size=32"]   (Node flags of the servers)
//
// vitrine-grpc-js is the service's own gRPC listener (src/apps/api/grpc-listener.ts: grpc-js, the
// Connect implementation invoked with an interceptor chain, the key-first server interceptor, request
// ids, context values), with a key check that accepts every key and no interceptors: what the
// listener adds to grpc-js itself. service-grpc and service-rest are the API process's two listeners
// as it opens them (bench/service-doors.ts: every interceptor, a real key check, metrics, a log line
// per call to /dev/null), called with an organization key, gRPC on the gRPC port and REST's
// POST /search over HTTP/1.1 keep-alive: what a search costs the service besides the search itself.
// Each server runs in a child process of its own; the client (Connect's gRPC transport, as in
// bench:search) runs here. Server CPU per call is the child's CPU time over the measured calls.
import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import { parseArgs } from "node:util";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import type { ConnectRouter } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import fastify from "fastify";
import * as grpc from "@grpc/grpc-js";
import { grpcContextValues, requestIdOf } from "../src/operations/index.js";
import { createGrpcListener } from "../src/apps/api/grpc-listener.js";
import { API_KEY_HEADER } from "../src/rpc/index.js";
import type { SearchHit } from "../src/search/index.js";
import { ORGANIZATION_ID, serveServiceDoors } from "./service-doors.js";
import {
  SearchProductsRequestSchema,
  SearchProductsResponseSchema,
  SearchService,
} from "../src/gen/vitrine/v1/search_service_pb.js";

type ServerKind = "fastify-connect" | "fastify-connect-h2" | "node-connect" | "grpc-js" | "vitrine-grpc-js" | "service-grpc" | "service-rest";

/** HTTP/2 settings tried against Node's defaults: larger flow-control windows, more streams, no Nagle. */
const H2_SETTINGS = { settings: { initialWindowSize: 1 << 20, maxConcurrentStreams: 1000, maxHeaderListSize: 1 << 16 }, maxSessionMemory: 64 };

const ANSWER = create(SearchProductsResponseSchema, {
  status: "success",
  results: Array.from({ length: 10 }, (_, i) => ({
    productId: `sku-${i}`,
    score: 0.5 + i / 100,
    metadata: { colour: "red", price: 40 + i, rank: "NO_BOOST", tags: ["sale", "new"] } as JsonObject,
  })),
});

// As the service configures Connect (src/rpc/routes.ts): small answers go uncompressed.
const CONNECT_OPTIONS = { routes, compressMinBytes: 64 * 1024 };

function routes(router: ConnectRouter): void {
  router.service(SearchService, { searchProducts: async () => ANSWER });
}

async function serve(kind: ServerKind): Promise<{ port: number; key?: string; close?: () => Promise<void> }> {
  if (kind === "service-grpc" || kind === "service-rest") {
    const { restPort, grpcPort, key, close } = await serveServiceDoors(ANSWER.results as SearchHit[]);
    return { port: kind === "service-grpc" ? grpcPort : restPort, key, close };
  }
  return { port: await servePlain(kind) };
}

async function servePlain(kind: ServerKind): Promise<number> {
  switch (kind) {
    case "fastify-connect": {
      const server = fastify({ http2: true });
      await server.register(fastifyConnectPlugin, CONNECT_OPTIONS);
      await server.listen({ port: 0, host: "127.0.0.1" });
      return (server.server.address() as { port: number }).port;
    }
    case "fastify-connect-h2": {
      // Fastify hands `http` to http2.createServer (its types admit only HTTP/1 options there).
      const server = fastify({ http2: true, http2SessionTimeout: 72_000, ...({ http: H2_SETTINGS } as object) });
      server.server.on("connection", (socket: import("node:net").Socket) => socket.setNoDelay(true));
      await server.register(fastifyConnectPlugin, CONNECT_OPTIONS);
      await server.listen({ port: 0, host: "127.0.0.1" });
      return (server.server.address() as { port: number }).port;
    }
    case "node-connect": {
      const server = http2.createServer(connectNodeAdapter(CONNECT_OPTIONS));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return (server.address() as { port: number }).port;
    }
    case "grpc-js": {
      const server = new grpc.Server();
      const method = SearchService.method.searchProducts;
      const definition: grpc.ServiceDefinition = {
        searchProducts: {
          path: `/${SearchService.typeName}/${method.name}`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (message: unknown) => Buffer.from(toBinary(SearchProductsRequestSchema, message as never)),
          requestDeserialize: (bytes: Buffer) => fromBinary(SearchProductsRequestSchema, bytes),
          responseSerialize: (message: unknown) => Buffer.from(toBinary(SearchProductsResponseSchema, message as never)),
          responseDeserialize: (bytes: Buffer) => fromBinary(SearchProductsResponseSchema, bytes),
        },
      };
      server.addService(definition, { searchProducts: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, ANSWER) });
      return new Promise((resolve, reject) =>
        server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
      );
    }
    case "vitrine-grpc-js": {
      const silent = { info() {}, warn() {}, error() {} };
      const listener = createGrpcListener({
        routes,
        interceptors: [],
        keyFirst: { services: [SearchService], checkKey: async (key) => ({ key: key ?? "", principal: { kind: "admin" } }) },
        onRefused: () => undefined,
        logger: silent,
        maxRequestBytes: 8 * 1_048_576,
        shutdownGraceMs: 1000,
        requestId: (metadata) => requestIdOf({ headers: { "x-request-id": String(metadata.get("x-request-id")[0] ?? "") } }),
        contextValues: grpcContextValues,
      });
      const url = await listener.listen(0, "127.0.0.1");
      return Number(new URL(url).port);
    }
    default:
      throw new Error(`unknown server ${kind}`);
  }
}

/** One SearchProducts call to the server under test: gRPC (Connect's client), or REST for service-rest. */
function caller(kind: ServerKind, port: number, key: string | undefined, request: Record<string, unknown>): () => Promise<unknown> {
  const headers: Record<string, string> = key === undefined ? {} : { [API_KEY_HEADER]: key };
  if (kind !== "service-rest") {
    const client = createClient(SearchService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
    return () => client.searchProducts(request, { headers });
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  // The REST body names fields as the protos do (visual_weight).
  const body = JSON.stringify(toJson(SearchProductsRequestSchema, create(SearchProductsRequestSchema, request), { useProtoFieldName: true }));
  return () =>
    new Promise((resolve, reject) => {
      const req = http.request(
        { host: "127.0.0.1", port, path: "/search", method: "POST", agent, headers: { ...headers, "content-type": "application/json" } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`REST ${res.statusCode}: ${Buffer.concat(chunks).toString()}`))));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
}

// Child: serve, report the port, answer CPU questions.
if (process.argv[2] === "--serve") {
  const { close, ...served } = await serve(process.argv[3] as ServerKind);
  process.on("message", (message) => {
    if (message === "cpu") process.send!({ cpu: process.cpuUsage() });
    if (message === "exit") void (close?.() ?? Promise.resolve()).finally(() => process.exit(0));
  });
  process.send!(served);
} else {
  const { values } = parseArgs({
    options: {
      calls: { type: "string", default: "6000" },
      concurrency: { type: "string", default: "8" },
      servers: { type: "string", default: "fastify-connect,grpc-js,vitrine-grpc-js" },
      rounds: { type: "string", default: "2" },
      "cpu-prof": { type: "string" },
      "server-flags": { type: "string", default: "" },
    },
  });
  const calls = Number(values.calls);
  const concurrency = Number(values.concurrency);
  const kinds = values.servers.split(",") as ServerKind[];
  const request = { organizationId: ORGANIZATION_ID, catalogId: "00000000-0000-4000-8000-000000000001", query: "red summer dress", topK: 10, visualWeight: 0.5, similarityThreshold: 0 };

  const ask = <T>(child: ChildProcess, message: string) =>
    new Promise<T>((resolve) => {
      child.once("message", (answer) => resolve(answer as T));
      child.send(message);
    });

  console.log(`${calls} unary SearchProducts calls per run, ${concurrency} concurrent; Connect gRPC client in this process; server in a child`);
  console.log("server             | QPS (8) | server CPU per call | p50 1 client");
  // Interleaved rounds: the machine is shared, so compare within a round.
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const kind of kinds) {
      const profile = values["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", `${values["cpu-prof"]}/${kind}-${round}`] : [];
      const child = fork(process.argv[1]!, ["--serve", kind], { execArgv: [...process.execArgv, ...profile, ...values["server-flags"].split(" ").filter(Boolean)], stdio: "inherit" });
      // A failing client must not leave the server behind.
      const orphan = () => child.kill();
      process.once("exit", orphan);
      const { port, key } = await new Promise<{ port: number; key?: string }>((resolve) => child.once("message", (m) => resolve(m as { port: number; key?: string })));
      const call = caller(kind, port, key, request);
      for (let i = 0; i < 500; i++) await call();

      const single: number[] = [];
      for (let i = 0; i < 1000; i++) {
        const start = performance.now();
        await call();
        single.push(performance.now() - start);
      }
      single.sort((a, b) => a - b);

      const before = (await ask<{ cpu: NodeJS.CpuUsage }>(child, "cpu")).cpu;
      let next = 0;
      const start = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < calls) await call();
        }),
      );
      const wallMs = performance.now() - start;
      const after = (await ask<{ cpu: NodeJS.CpuUsage }>(child, "cpu")).cpu;
      const cpuUs = after.user + after.system - before.user - before.system;
      console.log(
        `${kind.padEnd(18)} | ${Math.round((calls / wallMs) * 1000).toString().padStart(7)} | ${(cpuUs / calls / 1000).toFixed(3)} ms`.padEnd(48) +
          ` | ${single[500]!.toFixed(2)} ms   (round ${round})`,
      );
      child.send("exit");
      await new Promise((resolve) => child.once("exit", resolve));
      process.off("exit", orphan);
    }
  }
  process.exit(0);
}
