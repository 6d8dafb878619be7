import { once } from "node:events";
import { fromBinary } from "@bufbuild/protobuf";
import type { DescMessage, DescMethod, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ContextValues, HandlerContext, Interceptor, MethodImplSpec } from "@connectrpc/connect";
import { invokeUnaryImplementation, transformInvokeImplementation } from "@connectrpc/connect/protocol";
import type {
  Metadata,
  ServerDuplexStream,
  ServerUnaryCall,
  ServerWritableStream,
  sendUnaryData,
  UntypedHandleCall,
} from "@grpc/grpc-js";
import { createCallContext, REQUEST_ID_HEADER } from "../../rpc/index.js";
import { headersOf, metadataOf, parseError, statusOf } from "./grpc-metadata.js";

export const GRPC_PROTOCOL = "grpc";
// Given as the abort reason, so no DOMException (and its stack) is built per call.
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);
const CANCELLED = new ConnectError("the caller cancelled the call", Code.Canceled);

/** What the listener tells each call's handler about the call, and is told when it ends. */
export interface GrpcCallHooks {
  /** The call's request id, from its metadata (the caller's x-request-id when acceptable). */
  requestId(metadata: Metadata): string;
  /** Context values of a call (door `grpc`, the client's address, the key checked first). */
  contextValues(peer: string, metadata: Metadata): ContextValues;
  /** Told when a call ends, with its gRPC status code. */
  ended(call: { path: string; requestId: string; code: number; started: bigint }): void;
}

/**
 * A grpc-js handler for one method that runs Connect's implementation of it through the same
 * interceptors (errors, auth, rate limit, metrics) as every other door, so the gRPC listener
 * cannot behave differently from Connect or REST: requests arrive as bytes (so a malformed message
 * is INVALID_ARGUMENT from here, not grpc-js's INTERNAL) and are decoded with the generated
 * protobuf-es schema; metadata becomes the request header, the response header goes out as initial
 * metadata with the request id, errors leave with their code, message and metadata as trailers.
 */
export function grpcHandler(spec: MethodImplSpec, interceptors: Interceptor[], hooks: GrpcCallHooks): UntypedHandleCall {
  const path = `/${spec.method.parent.typeName}/${spec.method.name}`;
  const start = (call: ServerUnaryCall<Buffer, unknown> | ServerWritableStream<Buffer, unknown> | ServerDuplexStream<Buffer, unknown>) => {
    const started = process.hrtime.bigint();
    const requestId = hooks.requestId(call.metadata);
    const header = headersOf(call.metadata);
    header.set(REQUEST_ID_HEADER, requestId);
    const deadline = call.getDeadline();
    const timeoutMs = deadline === Infinity ? undefined : Number(deadline) - Date.now();
    const context = createCallContext({
      method: spec.method,
      protocolName: GRPC_PROTOCOL,
      requestHeader: header,
      contextValues: hooks.contextValues(call.getPeer(), call.metadata),
      timeoutMs,
    });
    // Every answer's initial metadata is the response header, so the request id goes there once.
    context.responseHeader.set(REQUEST_ID_HEADER, requestId);
    (call as NodeJS.EventEmitter).once("cancelled", () => context.abort(CANCELLED));
    const ended = (code: number) => {
      // Ending the context clears its deadline timer and tells anything still listening.
      context.abort(CALL_ENDED);
      hooks.ended({ path, requestId, code, started });
    };
    return { context, ended };
  };

  switch (spec.kind) {
    case "unary":
      return (call: ServerUnaryCall<Buffer, unknown>, callback: sendUnaryData<unknown>) => {
        const { context, ended } = start(call);
        const fail = (error: unknown) => {
          const status = statusOf(error, context.responseTrailer);
          call.sendMetadata(metadataOf(context.responseHeader));
          ended(status.code);
          callback(status);
        };
        let request: MessageShape<DescMessage>;
        try {
          request = decode(spec.method, call.request);
        } catch (error) {
          fail(error);
          return;
        }
        invokeUnaryImplementation(spec, context, request, interceptors).then(
          (message) => {
            call.sendMetadata(metadataOf(context.responseHeader));
            ended(0);
            callback(null, message, metadataOf(context.responseTrailer));
          },
          fail,
        );
      };
    case "server_streaming":
      return (call: ServerWritableStream<Buffer, unknown>) => {
        const { context, ended } = start(call);
        const header = { sent: false };
        let request: MessageShape<DescMessage>;
        try {
          request = decode(spec.method, call.request);
        } catch (error) {
          finishStream(call, context, header, ended, error);
          return;
        }
        const output = transformInvokeImplementation(spec, context, interceptors)(single(request));
        void sendAll(call, context, header, output).then(
          () => finishStream(call, context, header, ended),
          (error: unknown) => finishStream(call, context, header, ended, error),
        );
      };
    case "bidi_streaming":
      return (call: ServerDuplexStream<Buffer, unknown>) => {
        const { context, ended } = start(call);
        const header = { sent: false };
        const output = transformInvokeImplementation(spec, context, interceptors)(decodeAll(spec.method, call));
        void sendAll(call, context, header, output).then(
          () => finishStream(call, context, header, ended),
          (error: unknown) => finishStream(call, context, header, ended, error),
        );
      };
    case "client_streaming":
      // No service of this repository has one; a new one fails at start, not at its first call.
      throw new Error(`${path}: client-streaming methods are not served on the gRPC listener`);
  }
}

function decode(method: DescMethod, bytes: Buffer): MessageShape<DescMessage> {
  try {
    return fromBinary(method.input, bytes);
  } catch (error) {
    throw parseError(error);
  }
}

async function* single<T>(value: T): AsyncIterable<T> {
  yield value;
}

async function* decodeAll(method: DescMethod, call: ServerDuplexStream<Buffer, unknown>): AsyncIterable<MessageShape<DescMessage>> {
  // Not the stream's own iterator: at its end it destroys the stream, whose writing side still
  // owes the caller the answers and the status.
  for await (const bytes of call.iterator({ destroyOnReturn: false })) yield decode(method, bytes as Buffer);
}

/** Writes every message, waiting for the stream to drain when the caller reads slower than we write. */
async function sendAll(
  call: ServerWritableStream<Buffer, unknown> | ServerDuplexStream<Buffer, unknown>,
  context: HandlerContext,
  header: { sent: boolean },
  output: AsyncIterable<unknown>,
): Promise<void> {
  for await (const message of output) {
    if (call.cancelled) break;
    sendHeader(call, context, header);
    if (!call.write(message)) await once(call, "drain", { signal: context.signal }).catch(() => undefined);
  }
}

function finishStream(
  call: ServerWritableStream<Buffer, unknown> | ServerDuplexStream<Buffer, unknown>,
  context: HandlerContext,
  header: { sent: boolean },
  ended: (code: number) => void,
  error?: unknown,
): void {
  sendHeader(call, context, header);
  if (error === undefined) {
    ended(0);
    call.end(metadataOf(context.responseTrailer));
    return;
  }
  const status = statusOf(error, context.responseTrailer);
  ended(status.code);
  // grpc-js's documented way to end a streaming call with an error status.
  call.emit("error", status);
}

/** The response header as initial metadata, once per call (grpc-js would ignore a second one, after building it). */
function sendHeader(call: ServerWritableStream<Buffer, unknown> | ServerDuplexStream<Buffer, unknown>, context: HandlerContext, header: { sent: boolean }): void {
  if (header.sent) return;
  header.sent = true;
  call.sendMetadata(metadataOf(context.responseHeader));
}
