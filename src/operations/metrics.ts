import { Code, ConnectError } from "@connectrpc/connect";
import type { Interceptor } from "@connectrpc/connect";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { FastifyInstance } from "fastify";
import type { Logger } from "../logging/index.js";
import type { BatchReport, MapFitReport } from "../processing/index.js";
import { doorKey } from "./call-context.js";
import type { Door } from "./call-context.js";
import type { Store, StoreOfError } from "./store.js";

/** Where a store error was seen; the `source` label of the store error counters. */
export type ErrorSource = "rpc" | "connection" | "readiness" | "metrics";


const GRPC_CODE_NAMES: ReadonlyMap<Code, string> = new Map([
  [Code.Canceled, "CANCELLED"],
  [Code.Unknown, "UNKNOWN"],
  [Code.InvalidArgument, "INVALID_ARGUMENT"],
  [Code.DeadlineExceeded, "DEADLINE_EXCEEDED"],
  [Code.NotFound, "NOT_FOUND"],
  [Code.AlreadyExists, "ALREADY_EXISTS"],
  [Code.PermissionDenied, "PERMISSION_DENIED"],
  [Code.ResourceExhausted, "RESOURCE_EXHAUSTED"],
  [Code.FailedPrecondition, "FAILED_PRECONDITION"],
  [Code.Aborted, "ABORTED"],
  [Code.OutOfRange, "OUT_OF_RANGE"],
  [Code.Unimplemented, "UNIMPLEMENTED"],
  [Code.Internal, "INTERNAL"],
  [Code.Unavailable, "UNAVAILABLE"],
  [Code.DataLoss, "DATA_LOSS"],
  [Code.Unauthenticated, "UNAUTHENTICATED"],
]);

/** The canonical gRPC status name of a Connect code ("OK" for success). */
export function grpcCodeName(code: Code | undefined): string {
  return code === undefined ? "OK" : (GRPC_CODE_NAMES.get(code) ?? "UNKNOWN");
}

/**
 * The service's Prometheus metrics, in a registry of its own (one per API app, so several apps in one
 * process, as in tests, do not collide).
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<"method" | "route" | "status">;
  private readonly httpDuration: Histogram<"method" | "route" | "status">;
  private readonly rpcRequests: Counter<"door" | "service" | "method" | "code">;
  private readonly rpcDuration: Histogram<"door" | "service" | "method" | "code">;
  private readonly rateLimited: Counter<"door">;
  private readonly storeErrors: Record<Store, Counter<"source">>;
  private readonly embedding: Histogram;
  private readonly processedProducts: Counter<"outcome">;
  private readonly mapFits: Counter<"outcome">;
  private readonly mapFitDuration: Histogram<"outcome">;
  private readonly filterLearnings: Counter<"outcome">;

  /** `storeOf` tells which store an error came from, for the store error counters. */
  constructor(private readonly storeOf: StoreOfError) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: "vitrine_http_requests_total",
      help: "HTTP requests answered on the REST listener (REST, Connect, gRPC-Web, operations routes), by route pattern and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.httpDuration = new Histogram({
      name: "vitrine_http_request_duration_seconds",
      help: "Time from request to the end of the response on the REST listener, by route pattern and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.rpcRequests = new Counter({
      name: "vitrine_rpc_requests_total",
      help: "RPCs by door (rest, connect, grpc, grpc-web), service, method and gRPC status code",
      labelNames: ["door", "service", "method", "code"],
      registers,
    });
    this.rpcDuration = new Histogram({
      name: "vitrine_rpc_duration_seconds",
      help: "RPC handling time (to the response message, or the first one of a stream), by door, service, method and code",
      labelNames: ["door", "service", "method", "code"],
      registers,
    });
    this.rateLimited = new Counter({
      name: "vitrine_rate_limited_total",
      help: "RPCs refused by the per-key rate limit (RESOURCE_EXHAUSTED, HTTP 429), by door",
      labelNames: ["door"],
      registers,
    });
    this.storeErrors = {
      mysql: new Counter({
        name: "vitrine_mysql_errors_total",
        help: "MySQL errors seen by this process: rpc (an RPC failed on one), readiness (probe failed), metrics (queue-depth query failed)",
        labelNames: ["source"],
        registers,
      }),
      redis: new Counter({
        name: "vitrine_redis_errors_total",
        help: "Redis errors seen by this process: rpc (an RPC failed on one), connection (client error events), readiness (probe failed)",
        labelNames: ["source"],
        registers,
      }),
    };
    this.embedding = new Histogram({
      name: "vitrine_embedding_seconds",
      help: "Embedding time per product (image, colour and text encoders) in the worker processes this service started",
      buckets: [0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.mapFits = new Counter({
      name: "vitrine_text_map_fits_total",
      help: "Text-image map fits run by the worker processes this service started, by outcome (fitted, failed); a failed one is retried after a back-off",
      labelNames: ["outcome"],
      registers,
    });
    this.mapFitDuration = new Histogram({
      name: "vitrine_text_map_fit_seconds",
      help: "Duration of text-image map fits (reading the sample, fitting, saving), by outcome",
      labelNames: ["outcome"],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120],
      registers,
    });
    this.processedProducts = new Counter({
      name: "vitrine_processing_products_total",
      help: "Products handled by the worker processes this service started, by outcome (processed, retried, failed)",
      labelNames: ["outcome"],
      registers,
    });
    this.filterLearnings = new Counter({
      name: "vitrine_filter_learnings_total",
      help: "Filters this process tried to learn (SEARCH_FILTER_LEARNING), by outcome (learned, named, named_not_held, too_many, no_room, lost, written, failed)",
      labelNames: ["outcome"],
      registers,
    });
  }

  /** A filter learning of the vector index ended so (its LearningOutcome). */
  filterLearning(outcome: string): void {
    this.filterLearnings.inc({ outcome });
  }

  /** A text-image map fit in a worker process, fitted or failed. */
  mapFit(fit: Pick<MapFitReport, "outcome" | "seconds">): void {
    this.mapFits.inc({ outcome: fit.outcome });
    this.mapFitDuration.observe({ outcome: fit.outcome }, fit.seconds);
  }

  /** Counts and times every response of a listener by its route pattern (not its URL). */
  instrumentHttp(server: FastifyInstance): void {
    server.addHook("onRequest", async (request, reply) => {
      const started = process.hrtime.bigint();
      // The raw response's finish, not Fastify's onResponse hook: the Connect routes write the raw
      // response themselves.
      reply.raw.once("finish", () => {
        const labels = {
          method: request.method,
          route: request.routeOptions.url ?? "unmatched",
          status: String(reply.raw.statusCode),
        };
        this.httpRequests.inc(labels);
        this.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
      });
    });
  }

  /** Outermost RPC interceptor: counts and times every call with its final status code. */
  rpcInterceptor(): Interceptor {
    return (next) => async (req) => {
      const started = process.hrtime.bigint();
      let code: Code | undefined;
      try {
        return await next(req);
      } catch (error) {
        code = ConnectError.from(error).code;
        throw error;
      } finally {
        const labels = { door: req.contextValues.get(doorKey), service: req.service.typeName, method: req.method.name, code: grpcCodeName(code) };
        this.rpcRequests.inc(labels);
        this.rpcDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
      }
    };
  }

  /** Counts a call refused before it reached the RPC layer (a bad key checked first). */
  rpcRefused(door: Door, service: string, method: string, code: Code, seconds: number): void {
    const labels = { door, service, method, code: grpcCodeName(code) };
    this.rpcRequests.inc(labels);
    this.rpcDuration.observe(labels, seconds);
  }

  rateLimitedCall(door: string): void {
    this.rateLimited.inc({ door });
  }

  /** Counts `error` against its store, when its type names one; says which. */
  storeError(error: unknown, source: ErrorSource): Store | undefined {
    const store = this.storeOf(error);
    if (store) this.storeErrors[store].inc({ source });
    return store;
  }

  /** Counts an error known to come from `store`. */
  storeErrorOf(store: Store, source: ErrorSource): void {
    this.storeErrors[store].inc({ source });
  }

  processingBatch(batch: Pick<BatchReport, "processed" | "retried" | "failed" | "embedMs">): void {
    if (batch.processed > 0) this.processedProducts.inc({ outcome: "processed" }, batch.processed);
    if (batch.retried > 0) this.processedProducts.inc({ outcome: "retried" }, batch.retried);
    if (batch.failed > 0) this.processedProducts.inc({ outcome: "failed" }, batch.failed);
    for (const ms of batch.embedMs) this.embedding.observe(ms / 1000);
  }

  /**
   * Products by status (PROCESSING is the processing queue's depth), counted on each scrape;
   * concurrent scrapes share one count. A failed count leaves the gauge empty for that scrape
   * rather than failing the whole scrape.
   */
  productsByStatus(countProducts: () => Promise<Record<string, number>>, log: Logger): void {
    const metrics = this;
    let inFlight: Promise<Record<string, number>> | undefined;
    const count = () => (inFlight ??= countProducts().finally(() => (inFlight = undefined)));
    new Gauge({
      name: "vitrine_products",
      help: "Products of active catalogs by status, counted in MySQL at scrape time; PROCESSING is the processing queue",
      labelNames: ["status"],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          for (const [status, n] of Object.entries(await count())) this.set({ status }, n);
        } catch (error) {
          metrics.storeErrorOf("mysql", "metrics");
          log.warn({ err: error }, "metrics: products by status could not be counted");
        }
      },
    });
  }

  /**
   * Counts the client's error events (failed connections, reconnects) and logs them: once per
   * distinct message, and at most every 30 s for a repeating one.
   */
  watchRedis(redis: { on(event: "error", listener: (error: Error) => void): unknown }, log: Logger): void {
    let lastMessage = "";
    let lastLoggedMs = 0;
    redis.on("error", (error: Error) => {
      this.storeErrorOf("redis", "connection");
      const now = Date.now();
      if (error.message !== lastMessage || now - lastLoggedMs > 30_000) {
        log.warn({ err: error }, "Redis connection error");
        lastMessage = error.message;
        lastLoggedMs = now;
      }
    });
  }

  /** The exposition: body and content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
