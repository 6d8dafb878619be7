import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ContextValues, Interceptor, MethodImplSpec } from "@connectrpc/connect";
import { Server, ServerCredentials, status as GrpcStatus } from "@grpc/grpc-js";
import type { Metadata, ServiceDefinition, UntypedServiceImplementation } from "@grpc/grpc-js";
import type { Code } from "@connectrpc/connect";
import type { Logger } from "../../logging/index.js";
import { methodImplementations, withCheckedKey } from "../../rpc/index.js";
import { grpcHandler } from "./grpc-calls.js";
import { answerEncoder } from "./grpc-encoding.js";
import { checkedKeyOf, grpcKeyFirst } from "./grpc-key-first.js";
import type { RpcKeyFirstOptions } from "./rpc-key-first.js";

export interface GrpcListenerOptions {
  /** Registers the implementations (the same function the Fastify listener's Connect router gets). */
  routes: (router: ConnectRouter) => void;
  /** The same interceptors as every other door. */
  interceptors: readonly Interceptor[];
  /** Services whose calls need a key, checked before the message is read; see grpc-key-first.ts. */
  keyFirst: Omit<RpcKeyFirstOptions, "onRefused">;
  /** Told of each call refused by the key-first check (metrics). */
  onRefused: (call: { service: string; method: string; code: Code; seconds: number }) => void;
  logger: Logger;
  maxRequestBytes: number;
  /** How long shutdown waits for in-flight calls before cutting connections. */
  shutdownGraceMs: number;
  /** Each call's request id from the caller's x-request-id (see requestIdOf). */
  requestId: (metadata: Metadata) => string;
  /** Context values of each call (door `grpc`, client address). */
  contextValues: (clientAddress: string | undefined) => ContextValues;
}

export interface GrpcListener {
  /** Binds and starts serving; returns the address as an http:// URL (h2c). */
  listen(port: number, host: string): Promise<string>;
  /** GOAWAY to every connection, calls in flight complete; whatever is left after the grace period is cut. */
  close(): Promise<void>;
}

/**
 * The gRPC port, served by @grpc/grpc-js's server rather than Connect on Node's HTTP/2 server:
 * the same call costs it about half the server CPU (README "Measurements", bench/grpc-servers.ts).
 * Every method runs the Connect implementation through the same interceptors as the other doors
 * (grpc-calls.ts), so this listener only changes the wire, not the behaviour.
 */
export function createGrpcListener(options: GrpcListenerOptions): GrpcListener {
  const { logger } = options;
  const interceptors = [...options.interceptors];
  const hooks = {
    requestId: options.requestId,
    contextValues: (peer: string, metadata: Metadata) => withCheckedKey(options.contextValues(addressOf(peer)), checkedKeyOf(metadata)),
    ended(call: { path: string; requestId: string; code: number; started: bigint }) {
      logCall(logger, call.path, call.requestId, call.code, call.started);
    },
  };
  const server = new Server({
    "grpc.max_receive_message_length": options.maxRequestBytes,
    // HTTP/2 session memory (MB) a caller may hold buffered: room for two messages at the limit,
    // as the Fastify listener allowed; grpc-js's default is unlimited.
    "grpc-node.max_session_memory": Math.ceil((2 * options.maxRequestBytes) / 1_048_576) + 10,
    // Channelz keeps per-call and per-connection statistics for a channelz service this port does
    // not serve: about 7% of a call's server CPU (bench/grpc-servers.ts, service-grpc) for nothing.
    "grpc.enable_channelz": 0,
    interceptors: [
      grpcKeyFirst({
        ...options.keyFirst,
        requestId: options.requestId,
        onRefused(call) {
          options.onRefused({ ...call, seconds: Number(process.hrtime.bigint() - call.started) / 1e9 });
          logCall(logger, `/${call.service}/${call.method}`, call.requestId, call.code, call.started);
        },
      }),
    ],
  });

  const byService = new Map<DescService, MethodImplSpec[]>();
  for (const spec of methodImplementations(options.routes).values()) {
    byService.set(spec.method.parent, [...(byService.get(spec.method.parent) ?? []), spec]);
  }
  for (const specs of byService.values()) {
    const definition: Record<string, ServiceDefinition[string]> = {};
    const implementation: UntypedServiceImplementation = {};
    for (const spec of specs) {
      definition[spec.method.localName] = methodDefinition(spec.method);
      implementation[spec.method.localName] = grpcHandler(spec, interceptors, hooks);
    }
    server.addService(definition, implementation);
  }

  return {
    listen(port, host) {
      const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
      return new Promise((resolve, reject) =>
        server.bindAsync(target, ServerCredentials.createInsecure(), (error, bound) =>
          error ? reject(error) : resolve(`http://${urlHost(host)}:${bound}`),
        ),
      );
    },
    close() {
      return new Promise((resolve) => {
        const cut = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, options.shutdownGraceMs);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      });
    },
  };
}

/**
 * A method as grpc-js sees it: bytes in (decoded by the handler, so a message that does not parse
 * gets INVALID_ARGUMENT like any other bad input), protobuf encoding out (grpc-encoding.ts).
 */
function methodDefinition(method: DescMethod): ServiceDefinition[string] {
  return {
    path: `/${method.parent.typeName}/${method.name}`,
    requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
    responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
    requestSerialize: (bytes: Buffer) => bytes,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: answerEncoder(method.output),
    responseDeserialize: (bytes: Buffer) => bytes,
  };
}

/** One line per call, as the Fastify listeners write one per request: never metadata or messages. */
function logCall(logger: Logger, rpc: string, reqId: string, code: number, started: bigint): void {
  const line = { reqId, rpc, code: GrpcStatus[code] ?? String(code), ms: Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10 };
  if (code === GrpcStatus.INTERNAL || code === GrpcStatus.UNKNOWN) logger.warn(line, "grpc call completed");
  else logger.info(line, "grpc call completed");
}

/** The client's address from grpc-js's peer string ("host:port", IPv6 hosts unbracketed). */
function addressOf(peer: string): string | undefined {
  if (peer === "unknown") return undefined;
  const colon = peer.lastIndexOf(":");
  return colon === -1 ? peer : peer.slice(0, colon);
}

function urlHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}
