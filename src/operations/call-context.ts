import { createContextKey, createContextValues } from "@connectrpc/connect";
import type { ContextValues } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";

/**
 * Which door a call came through. Calls from a listener get it from `listenerContextValues`;
 * the REST gateway's in-process transport sets no context values, so its calls keep the default.
 */
export type Door = "rest" | "connect" | "grpc" | "grpc-web";

export const doorKey = createContextKey<Door>("rest", { description: "door" });

/** The caller's address as the listener saw it; undefined for the REST gateway's in-process calls. */
export const clientAddressKey = createContextKey<string | undefined>(undefined, { description: "client address" });

/** Context values for a call arriving on a listener (connect-fastify's `contextValues` option). */
export function listenerContextValues(request: FastifyRequest): ContextValues {
  const values = createContextValues();
  values.set(doorKey, doorOf(String(request.headers["content-type"] ?? "")));
  values.set(clientAddressKey, request.ip);
  return values;
}

/** Context values for a call arriving on the gRPC listener (served by @grpc/grpc-js, not Fastify). */
export function grpcContextValues(clientAddress: string | undefined): ContextValues {
  const values = createContextValues();
  values.set(doorKey, "grpc");
  values.set(clientAddressKey, clientAddress);
  return values;
}

/** The door of a call arriving on a listener, from its content type. */
export function doorOf(contentType: string): Door {
  const type = contentType.toLowerCase();
  return type.startsWith("application/grpc-web") ? "grpc-web" : type.startsWith("application/grpc") ? "grpc" : "connect";
}
