import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ServiceImpl } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { Health, HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from "../gen/grpc/health/v1/health_pb.js";
import type { HealthCheckResponse } from "../gen/grpc/health/v1/health_pb.js";
import type { ServiceMetrics } from "./metrics.js";
import type { Readiness } from "./readiness.js";

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * The operations routes of the REST listener, all without an API key: liveness, readiness and the
 * Prometheus exposition.
 */
export function registerOperationsRoutes(rest: FastifyInstance, readiness: Readiness, metrics: ServiceMetrics): void {
  rest.get("/healthz", async (_request, reply) => {
    return reply.header("cache-control", "no-store").type(JSON_TYPE).send(JSON.stringify({ status: "ok" }));
  });
  rest.get("/readyz", async (_request, reply) => {
    const { ready, ...report } = await readiness.check();
    return reply
      .code(ready ? 200 : 503)
      .header("cache-control", "no-store")
      .type(JSON_TYPE)
      .send(JSON.stringify({ status: ready ? "ready" : "not ready", ...report }));
  });
  rest.get("/metrics", async (_request, reply) => {
    const { body, contentType } = await metrics.scrape();
    return reply.header("cache-control", "no-store").type(contentType).send(body);
  });
}

export { Health };

/**
 * grpc.health.v1.Health: the service as a whole ("") and each named service are SERVING exactly
 * when /readyz would answer 200. Watch sends the status at once, then again whenever it changes
 * (checked every `watchIntervalMs`), until the caller cancels or the service shuts down.
 */
export function healthService(readiness: Readiness, serviceNames: readonly string[], watchIntervalMs = 5000): ServiceImpl<typeof Health> {
  const known = new Set(["", ...serviceNames]);
  const current = async (): Promise<HealthCheckResponse_ServingStatus> =>
    (await readiness.check()).ready ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING;
  const response = (status: HealthCheckResponse_ServingStatus): HealthCheckResponse => create(HealthCheckResponseSchema, { status });

  return {
    async check(request) {
      if (!known.has(request.service)) throw new ConnectError(`unknown service "${request.service}"`, Code.NotFound);
      return response(await current());
    },
    async *watch(request, context) {
      const signal = AbortSignal.any([context.signal, readiness.shutdown]);
      let last: HealthCheckResponse_ServingStatus | undefined;
      while (!signal.aborted) {
        const status = known.has(request.service) ? await current() : HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN;
        if (status !== last) yield response(status);
        last = status;
        await sleep(watchIntervalMs, undefined, { signal }).catch(() => undefined);
      }
      if (readiness.shutdown.aborted && !context.signal.aborted && last === HealthCheckResponse_ServingStatus.SERVING) {
        yield response(HealthCheckResponse_ServingStatus.NOT_SERVING);
      }
    },
    async list() {
      const status = await current();
      return { statuses: Object.fromEntries([...known].map((name) => [name, response(status)])) };
    },
  };
}
