import { availableParallelism, homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import type { HnswMSetting } from "../search/hnsw-links.js";

/** Everything the service reads from its environment, validated once at start-up. */
export interface Config {
  /** REST gateway, Connect and gRPC-Web (HTTP/1.1). */
  port: number;
  /** gRPC over h2c. */
  grpcPort: number;
  host: string;
  mysqlUrl: string;
  /** MYSQL_URL was set (or resolved by the service that forked this worker): it is used as is and no MariaDB is started. */
  mysqlUrlSet: boolean;
  redis: RedisConfig;
  search: SearchConfig;
  /** Undefined when not configured; the launcher then generates one and stores it in dataDir. */
  adminApiKey: string | undefined;
  /** Where the service keeps local state (generated admin key, object storage). */
  dataDir: string;
  /** Derived files that can be rebuilt (compact word vectors, fetched binaries), shared across checkouts. */
  cacheDir: string;
  /** Base of objectUrl; default: the REST listener's own address. */
  publicUrl: string | undefined;
  processing: ProcessingConfig;
  /** How long shutdown waits for in-flight work before cutting connections. */
  shutdownGraceMs: number;
  /** How long start-up keeps retrying MySQL and Redis before it gives up. */
  startupWaitMs: number;
  /** How long an API key record read from MySQL is trusted (a revocation elsewhere takes effect within it). */
  apiKeyCacheMs: number;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  limits: Limits;
  rateLimit: RateLimitConfig;
}

export interface RateLimitConfig {
  /** Sustained calls per second per API key (per client address without a key); 0 disables. */
  perSecond: number;
  /** Calls a key may make at once after being idle (the bucket's size). */
  burst: number;
  /** "redis": every API process takes from one bucket per key; "memory": each process counts alone. */
  store: "redis" | "memory";
}

export interface RedisConfig {
  /** Undefined when not configured; `npm start` then provisions a Redis 8 and fills it in (unless clusterNodes is set). */
  url: string | undefined;
  /** Seed nodes of a Redis Cluster (REDIS_CLUSTER_NODES); the service then talks to the cluster instead of one server. */
  clusterNodes: { host: string; port: number }[] | undefined;
  /** Prefix of every key the service writes, so deployments (or test runs) can share a server. */
  keyPrefix: string;
}

export interface SearchConfig {
  /** Added to the score of BOOST products. */
  boost: number;
  /** Added to the score of SUPER_BOOST products. */
  superBoost: number;
  /** Catalogs with at most this many searchable products are scanned exactly instead of through HNSW. */
  exactUpTo: number;
  /** HNSW search breadth (VSIM EF); larger is slower and finds more of the true nearest. */
  ef: number;
  /** The breadth of an unfiltered search of a set of more than hnswLargeFrom elements (at least `ef`). */
  efLarge: number;
  /** HNSW links per node (VADD M) of the builds begun from now on, or "auto" by each set's size: more recall at a given EF, for memory and speed. */
  hnswM: HnswMSetting;
  /** With hnswM "auto", sets built for more products than this get M 32, others 16; unfiltered searches of larger sets walk at efLarge. */
  hnswLargeFrom: number;
  /** Whether a search's words also match descriptors letter for letter (off: meaning only, as before). */
  lexical: boolean;
  /** Every holder of a word held by at most this many products is scored; of a more common word, its first few (README "Lexical matching at scale"). */
  lexicalMaxHolders: number;
  /** Field postings for exact, fast selective eq/in filters (README: "Filtered search"); costs Redis memory. */
  filterPostings: boolean;
  /** Metadata fields whose every value gets a vector set of its own at the next reindex (README "Filtered search"); needs filterPostings. */
  valueSetFields: string[];
  /** Lexical holders' and filter candidates' elements kept in each API process (0: none; README "How lexical matching runs"). */
  holderCacheEntries: number;
  /** Without filterPostings, an eq/in filter asked again is learned: its matches held in the process (README "Filtered search: selective filters without postings"). */
  filterLearning: boolean;
  /** Redis connections of each API process that carry only unfiltered VSIMs, run on Redis's threads (0: inside the query script; README "HNSW off Redis's main thread"). */
  vsimConnections: number;
  /** A rebuild splits a catalog's index into sets of at most about this many products (README "One catalog over several shards"). */
  partSize: number;
  /** How often the service applies index changes another process could not apply at once. */
  indexSweepMs: number;
  /** How often one process among all those sharing the index drops the indexes of deleted catalogs. */
  indexOrphanSweepMs: number;
}

export interface ProcessingConfig {
  /** Worker processes the service starts (default: one per core); 0 leaves processing to `npm run worker` processes. */
  workers: number;
  batchSize: number;
  concurrency: number;
  leaseMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  idlePollMs: number;
  /** Lets image URLs resolve to private and loopback addresses (tests, on-premise image hosts). */
  allowPrivateImageHosts: boolean;
  /** Whole-download deadline per image, redirects included. */
  imageFetchTimeoutMs: number;
  imageMaxBytes: number;
  /**
   * Which library runs the image model in the worker processes. "auto": ONNX Runtime (the optional
   * dependency onnxruntime-node, within the embedding target) when it loads, else TensorFlow.js's
   * wasm backend (the reference, several times slower). Forcing one makes a failure to load it fatal.
   */
  imageRuntime: "auto" | "onnxruntime" | "tfjs";
  /**
   * Which networks embed photos (embeddings/image-encoder.ts): "mobilenet", within the embedding
   * target, or the opt-in "mobilenet+inception", better pictures-to-words and photo-to-photo
   * matches for ~6x the inference. A change re-embeds every product.
   */
  imageModel: "mobilenet" | "mobilenet+inception";
  /** Most described products one text-image map fit reads (a repeatable sample past that). */
  textMapMaxSamples: number;
  /**
   * How many nice steps below the service its worker processes run, so that requests do not wait
   * behind image inference; idle cycles still all go to the workers. 0 on a machine shared with
   * other CPU-bound work, where niced workers would yield to it.
   */
  workerNiceness: number;
}

export interface Limits {
  /** Largest request body, in bytes, on every transport. */
  maxRequestBytes: number;
  /** Most products in one Create Products call. */
  maxBatchSize: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxRequestBytes: 10 * 1024 * 1024,
  maxBatchSize: 1000,
};

const port = z.coerce.number().int().min(0).max(65535);

const schema = z.object({
  PORT: port.default(8080),
  GRPC_PORT: port.default(50051),
  HOST: z.string().min(1).default("0.0.0.0"),
  MYSQL_URL: z
    .string()
    .regex(/^mysql:\/\//, "must be a mysql:// URL")
    .default("mysql://root@127.0.0.1:3306/vitrine"),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL").optional(),
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(/^\s*[^\s,:]+:\d{1,5}\s*(,\s*[^\s,:]+:\d{1,5}\s*)*$/, "must be host:port,host:port,...")
    .optional(),
  REDIS_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_.-]*$/, "letters, digits and : _ . - only").default("vitrine:"),
  SEARCH_BOOST: z.coerce.number().min(0).max(1).default(0.05),
  SEARCH_SUPER_BOOST: z.coerce.number().min(0).max(1).default(0.1),
  SEARCH_EXACT_UP_TO: z.coerce.number().int().min(0).default(2000),
  SEARCH_EF: z.coerce.number().int().min(1).max(10_000).default(250),
  // README "How deep an unfiltered search goes": what an unfiltered search of a set past SEARCH_HNSW_M_LARGE_FROM needs for 0.95 at 1M.
  SEARCH_EF_LARGE: z.coerce.number().int().min(1).max(10_000).default(1000),
  // Redis accepts 4-4096; past 64 a node's links outweigh its 203 floats many times over.
  SEARCH_HNSW_M: z.union([z.literal("auto"), z.coerce.number().int().min(4).max(64)]).default("auto"),
  // README "HNSW's graph": where M 16's recall falls below 0.95 at SEARCH_EF 250.
  SEARCH_HNSW_M_LARGE_FROM: z.coerce.number().int().min(1).default(100_000),
  SEARCH_LEXICAL: z.enum(["on", "off"]).default("on"),
  // As low as the ranked sets go (storage/redis RANKED_FROM): README "Lexical matching at scale".
  SEARCH_LEXICAL_MAX_HOLDERS: z.coerce.number().int().min(1).max(1_000_000).default(128),
  SEARCH_FILTER_POSTINGS: z.enum(["on", "off"]).default("off"),
  // Plain and short, so a posting token's head (search/filter-facets.ts tokenHead) is kept whole even in a long
  // value's hashed token.
  SEARCH_VALUE_SETS: z
    .string()
    .regex(/^\s*([\w.:-]{1,40}\s*(,\s*[\w.:-]{1,40}\s*)*)?$/, "must be field names (letters, digits, _ . : -, at most 40 each) separated by commas")
    .default(""),
  SEARCH_HOLDER_CACHE: z.coerce.number().int().min(0).default(50_000),
  SEARCH_FILTER_LEARNING: z.enum(["on", "off"]).default("on"),
  SEARCH_VSIM_CONNECTIONS: z.coerce.number().int().min(0).max(64).default(4),
  // README "One catalog over several shards".
  SEARCH_PART_SIZE: z.coerce.number().int().min(1).default(500_000),
  INDEX_SWEEP_MS: z.coerce.number().int().min(100).default(5000),
  // The orphan sweep scans every key of the index (1-2 us of Redis's main thread a key,
  // bench/keyspace.ts), so one process among all those sharing it runs it, this often.
  INDEX_ORPHAN_SWEEP_MS: z.coerce.number().int().min(1000).default(3_600_000),
  ADMIN_API_KEY: z.string().min(16, "must be at least 16 characters").optional(),
  DATA_DIR: z.string().min(1).default(".data"),
  CACHE_DIR: z.string().min(1).optional(),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  // One worker process per core: inference and decoding are the CPU work of an import, and the
  // API process, which needs little CPU per request, stays responsive beside them.
  WORKERS: z.coerce.number().int().min(0).max(64).default(Math.min(64, availableParallelism())),
  // The work after each batch (index sync, the map's staleness check, which counts the catalog's
  // products) is paid once per batch: 64 products is about two seconds of one worker.
  PROCESSING_BATCH_SIZE: z.coerce.number().int().min(1).max(1000).default(64),
  PROCESSING_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  PROCESSING_LEASE_MS: z.coerce.number().int().min(1000).default(120_000),
  PROCESSING_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  PROCESSING_RETRY_BASE_MS: z.coerce.number().int().min(0).default(2000),
  PROCESSING_IDLE_POLL_MS: z.coerce.number().int().min(10).default(1000),
  IMAGE_FETCH_ALLOW_PRIVATE: z.enum(["true", "false"]).default("false"),
  IMAGE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  IMAGE_MAX_BYTES: z.coerce.number().int().min(1024).default(20 * 1024 * 1024),
  IMAGE_RUNTIME: z.enum(["auto", "onnxruntime", "tfjs"]).default("auto"),
  IMAGE_MODEL: z.enum(["mobilenet", "mobilenet+inception"]).default("mobilenet"),
  TEXT_MAP_MAX_SAMPLES: z.coerce.number().int().min(20).max(100_000).default(10_000),
  STARTUP_WAIT_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  WORKER_NICENESS: z.coerce.number().int().min(0).max(19).default(10),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(300_000).default(5000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MAX_REQUEST_BYTES: z.coerce.number().int().min(1024).default(DEFAULT_LIMITS.maxRequestBytes),
  MAX_BATCH_SIZE: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_LIMITS.maxBatchSize),
  // Generous: most storefronts send all their shoppers' calls with one key. Keys that need a tighter
  // (or no) limit get their own at creation.
  RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).max(1_000_000).default(1000),
  RATE_LIMIT_STORE: z.enum(["redis", "memory"]).default("redis"),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).max(1_000_000).default(2000),
});

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads the configuration; throws a ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  const e = parsed.data;
  if (e.REDIS_URL && e.REDIS_CLUSTER_NODES) throw new ConfigError("invalid configuration: set REDIS_URL or REDIS_CLUSTER_NODES, not both");
  const valueSetFields = [...new Set(e.SEARCH_VALUE_SETS.split(",").map((f) => f.trim()).filter((f) => f !== ""))];
  if (valueSetFields.length > 0 && e.SEARCH_FILTER_POSTINGS !== "on") {
    throw new ConfigError("invalid configuration: SEARCH_VALUE_SETS needs SEARCH_FILTER_POSTINGS=on (a value's set is kept beside its posting)");
  }
  return {
    port: e.PORT,
    grpcPort: e.GRPC_PORT,
    host: e.HOST,
    mysqlUrl: e.MYSQL_URL,
    mysqlUrlSet: cleaned.MYSQL_URL !== undefined,
    redis: { url: e.REDIS_URL, clusterNodes: clusterNodes(e.REDIS_CLUSTER_NODES), keyPrefix: e.REDIS_KEY_PREFIX },
    search: {
      boost: e.SEARCH_BOOST,
      superBoost: e.SEARCH_SUPER_BOOST,
      exactUpTo: e.SEARCH_EXACT_UP_TO,
      ef: e.SEARCH_EF,
      efLarge: e.SEARCH_EF_LARGE,
      hnswM: e.SEARCH_HNSW_M,
      hnswLargeFrom: e.SEARCH_HNSW_M_LARGE_FROM,
      lexical: e.SEARCH_LEXICAL === "on",
      lexicalMaxHolders: e.SEARCH_LEXICAL_MAX_HOLDERS,
      filterPostings: e.SEARCH_FILTER_POSTINGS === "on",
      valueSetFields,
      holderCacheEntries: e.SEARCH_HOLDER_CACHE,
      filterLearning: e.SEARCH_FILTER_LEARNING === "on",
      vsimConnections: e.SEARCH_VSIM_CONNECTIONS,
      partSize: e.SEARCH_PART_SIZE,
      indexSweepMs: e.INDEX_SWEEP_MS,
      indexOrphanSweepMs: e.INDEX_ORPHAN_SWEEP_MS,
    },
    adminApiKey: e.ADMIN_API_KEY,
    dataDir: e.DATA_DIR,
    cacheDir: e.CACHE_DIR ?? join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "vitrine"),
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ""),
    processing: {
      workers: e.WORKERS,
      batchSize: e.PROCESSING_BATCH_SIZE,
      concurrency: e.PROCESSING_CONCURRENCY,
      leaseMs: e.PROCESSING_LEASE_MS,
      maxAttempts: e.PROCESSING_MAX_ATTEMPTS,
      retryBaseMs: e.PROCESSING_RETRY_BASE_MS,
      idlePollMs: e.PROCESSING_IDLE_POLL_MS,
      allowPrivateImageHosts: e.IMAGE_FETCH_ALLOW_PRIVATE === "true",
      imageFetchTimeoutMs: e.IMAGE_FETCH_TIMEOUT_MS,
      imageMaxBytes: e.IMAGE_MAX_BYTES,
      imageRuntime: e.IMAGE_RUNTIME,
      imageModel: e.IMAGE_MODEL,
      textMapMaxSamples: e.TEXT_MAP_MAX_SAMPLES,
      workerNiceness: e.WORKER_NICENESS,
    },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    startupWaitMs: e.STARTUP_WAIT_MS,
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
    logLevel: e.LOG_LEVEL,
    limits: { maxRequestBytes: e.MAX_REQUEST_BYTES, maxBatchSize: e.MAX_BATCH_SIZE },
    rateLimit: { perSecond: e.RATE_LIMIT_PER_SECOND, burst: e.RATE_LIMIT_BURST, store: e.RATE_LIMIT_STORE },
  };
}

function clusterNodes(list: string | undefined): { host: string; port: number }[] | undefined {
  if (!list) return undefined;
  return list.split(",").map((entry) => {
    const [host, port] = entry.trim().split(":");
    return { host: host!, port: Number(port) };
  });
}
