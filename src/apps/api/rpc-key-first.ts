import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { API_KEY_HEADER } from "../../rpc/index.js";
import type { CheckedKey } from "../../rpc/index.js";

export interface RpcKeyFirstOptions {
  /** Services whose calls need a key (not the health service). */
  services: readonly DescService[];
  /** Throws the ConnectError a caller should see when the key is not good. */
  checkKey: (key: string | null) => Promise<CheckedKey>;
  /** Told of each call refused here, for the RPC metrics. */
  onRefused: (call: { contentType: string; service: string; method: string; code: Code; seconds: number }) => void;
}

// Refused before the message: a bad key, or no store to check it against. Anything else is left to the call.
export const REFUSED_BEFORE_MESSAGE: ReadonlySet<Code> = new Set([Code.Unauthenticated, Code.Unavailable]);

/** The keyed methods by request path (`/package.Service/Method`), on either port. */
export function keyedMethods(services: readonly DescService[]): Map<string, { service: string; method: string }> {
  const methods = new Map<string, { service: string; method: string }>();
  for (const service of services) {
    for (const method of service.methods) methods.set(`/${service.typeName}/${method.name}`, { service: service.typeName, method: method.name });
  }
  return methods;
}

// The key each request's check accepted, until the call's context values take it (checkedKeyOf).
const checkedKeys = new WeakMap<FastifyRequest["raw"], CheckedKey>();

/** The key refuseBadKeysFirst accepted for this request, for the auth interceptor not to check it again. */
export function checkedKeyOf(request: FastifyRequest): CheckedKey | undefined {
  return checkedKeys.get(request.raw);
}

/**
 * Connect and gRPC-Web check the key before the message is read, as REST does: a missing or
 * invalid key is UNAUTHENTICATED whatever the message holds (Connect decodes the message before
 * any interceptor runs). The answer is the protocol's own error: a Connect JSON error with its
 * HTTP status, or gRPC-Web's status headers (this listener is HTTP/1.1; gRPC has its own port,
 * grpc-key-first.ts). Good keys go on to the interceptors with the principal they name.
 */
export function refuseBadKeysFirst(server: FastifyInstance, options: RpcKeyFirstOptions): void {
  const methods = keyedMethods(options.services);
  server.addHook("onRequest", async (request, reply) => {
    const query = request.url.indexOf("?");
    const target = methods.get(query === -1 ? request.url : request.url.slice(0, query));
    if (target === undefined) return;
    const started = process.hrtime.bigint();
    const header = request.headers[API_KEY_HEADER];
    try {
      checkedKeys.set(request.raw, await options.checkKey(typeof header === "string" ? header : null));
      return;
    } catch (error) {
      const refusal = ConnectError.from(error);
      if (!REFUSED_BEFORE_MESSAGE.has(refusal.code)) return;
      const contentType = String(request.headers["content-type"] ?? "");
      const retryAfter = refusal.metadata.get("retry-after");
      options.onRefused({ contentType, ...target, code: refusal.code, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
      if (retryAfter !== null) reply.header("retry-after", retryAfter);
      if (contentType.startsWith("application/grpc")) {
        // gRPC-Web over HTTP/1.1: the status travels in the response headers, with no message.
        return reply
          .code(200)
          .header("content-type", contentType.split(";")[0]!)
          .header("grpc-status", String(refusal.code))
          .header("grpc-message", grpcMessage(refusal.rawMessage))
          .send();
      }
      return reply
        .code(codeToHttpStatus(refusal.code))
        .type("application/json")
        .send(JSON.stringify({ code: codeToString(refusal.code), message: refusal.rawMessage }));
    }
  });
}

/** gRPC's percent-encoding of grpc-message: only "%" and bytes outside printable ASCII are escaped. */
function grpcMessage(message: string): string {
  return message.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}
