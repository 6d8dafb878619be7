import { ServerInterceptingCall } from "@grpc/grpc-js";
import type { Metadata, ServerInterceptor } from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { API_KEY_HEADER, REQUEST_ID_HEADER } from "../../rpc/index.js";
import type { CheckedKey } from "../../rpc/index.js";
import { statusOf } from "./grpc-metadata.js";
import { keyedMethods, REFUSED_BEFORE_MESSAGE } from "./rpc-key-first.js";
import type { RpcKeyFirstOptions } from "./rpc-key-first.js";

// The key each call's check accepted, by the call's metadata: grpc-js hands the handler the very
// object the interceptor passed on.
const checkedKeys = new WeakMap<Metadata, CheckedKey>();

/** The key grpcKeyFirst accepted for the call with this metadata, for the auth interceptor not to check it again. */
export function checkedKeyOf(metadata: Metadata): CheckedKey | undefined {
  return checkedKeys.get(metadata);
}

export interface GrpcKeyFirstOptions extends Omit<RpcKeyFirstOptions, "onRefused"> {
  /** Told of each call refused here (metrics, the call's log line). */
  onRefused: (call: { service: string; method: string; requestId: string; code: Code; started: bigint }) => void;
  /** The call's request id, sent back with the refusal as with any answer. */
  requestId: (metadata: Metadata) => string;
}

/**
 * The gRPC listener's key-first refusal, as rpc-key-first.ts does it on the Fastify listener: the
 * key is checked when the call's metadata arrives, before grpc-js reads the message (its handlers
 * ask for the message only once the metadata has gone through), so a missing or invalid key is
 * UNAUTHENTICATED whatever the message holds, answered as a trailers-only response (grpc-js's
 * sendStatus before any metadata). Good keys go on to the interceptors with the principal they name.
 */
export function grpcKeyFirst(options: GrpcKeyFirstOptions): ServerInterceptor {
  const methods = keyedMethods(options.services);
  return (descriptor, call) => {
    const target = methods.get(descriptor.path);
    // Services without a key (health, reflection) skip the interceptor's per-call wrapping.
    if (target === undefined) return call as ServerInterceptingCall;
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, proceed) {
            const started = process.hrtime.bigint();
            const key = metadata.get(API_KEY_HEADER)[0];
            options.checkKey(typeof key === "string" ? key : null).then(
              (checked) => {
                checkedKeys.set(metadata, checked);
                proceed(metadata);
              },
              (error: unknown) => {
                const refusal = ConnectError.from(error);
                if (!REFUSED_BEFORE_MESSAGE.has(refusal.code)) {
                  proceed(metadata);
                  return;
                }
                const requestId = options.requestId(metadata);
                options.onRefused({ ...target, requestId, code: refusal.code, started });
                const status = statusOf(refusal);
                status.metadata.set(REQUEST_ID_HEADER, requestId);
                intercepting.sendStatus(status);
              },
            );
          },
        });
      },
    });
    return intercepting;
  };
}
