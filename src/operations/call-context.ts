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
  const contentType = String(request.headers["content-type"] ?? "").toLowerCase();
  const door: Door = contentType.startsWith("application/grpc-web")
    ? "grpc-web"
    : contentType.startsWith("application/grpc")
      ? "grpc"
      : "connect";
  values.set(doorKey, door);
  values.set(clientAddressKey, request.ip);
  return values;
}
