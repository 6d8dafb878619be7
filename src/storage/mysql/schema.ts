import { bigint, binary, boolean, customType, char, datetime, double, index, int, json, mysqlEnum, mysqlTable, primaryKey, text, uniqueIndex, varchar } from "drizzle-orm/mysql-core";
import type { JsonObject, ProductStatus, Rank } from "../../catalogs/index.js";
import { PRODUCT_STATUSES, RANKS } from "../../catalogs/index.js";
import type { Scope } from "../../auth/index.js";

/** Millisecond precision, always UTC (the pool runs with timezone Z). */
const timestamp = (name: string) => datetime(name, { mode: "date", fsp: 3 });

/** SKUs are case-sensitive and ASCII (see PRODUCT_ID_PATTERN): a binary ASCII column compares them exactly. */
const productId = customType<{ data: string }>({ dataType: () => "varchar(128) CHARACTER SET ascii COLLATE ascii_bin" });

/** Vectors are stored as little-endian float32 bytes: compact, and exact to read back. */
const vectorBlob = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "mediumblob" });

export const catalogs = mysqlTable(
  "catalogs",
  {
    id: char("id", { length: 36 }).primaryKey(),
    organizationId: char("organization_id", { length: 36 }).notNull(),
    name: varchar("name", { length: 200 }).notNull(),
    description: text("description").notNull(),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    deletedAt: timestamp("deleted_at"),
    // "" while active, the catalog's id once soft-deleted: the unique key below then only binds
    // active catalogs, so a deleted catalog's name can be reused.
    deletionMarker: char("deletion_marker", { length: 36 }).notNull().default(""),
    /**
     * Whether product_facets holds every product's facets: true from a catalog's creation; a catalog
     * that had products before the table existed is false until they are written (product-facets.ts).
     */
    facetsComplete: boolean("facets_complete").notNull().default(true),
  },
  (t) => [uniqueIndex("catalogs_org_name_active").on(t.organizationId, t.name, t.deletionMarker)],
);

export const products = mysqlTable(
  "products",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    id: productId("id").notNull(),
    imageUrl: varchar("image_url", { length: 2048 }).notNull(),
    /** Key of the service's copy of the image in object storage; the API turns it into objectUrl. */
    objectKey: varchar("object_key", { length: 512 }),
    descriptor: text("descriptor").notNull(),
    metadata: json("metadata").$type<JsonObject>().notNull(),
    status: mysqlEnum("status", PRODUCT_STATUSES).$type<ProductStatus>().notNull(),
    rank: mysqlEnum("rank", RANKS).$type<Rank>().notNull().default("NO_BOOST"),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    // The processing queue lives in the product rows themselves: a product is work to do while
    // it is PROCESSING, so nothing acknowledged can be lost between a queue and the table.
    /** Bumped each time the product is replaced; a worker's result only lands on the generation it processed. */
    generation: int("generation", { unsigned: true }).notNull().default(0),
    /** Claims of the current generation, including ones whose worker died. */
    attempts: int("attempts", { unsigned: true }).notNull().default(0),
    leaseOwner: varchar("lease_owner", { length: 100 }),
    leaseExpiresAt: timestamp("lease_expires_at"),
    nextAttemptAt: timestamp("next_attempt_at"),
    /** Why the product is in ERROR, or why its last attempt failed while it is retried. */
    errorReason: varchar("error_reason", { length: 1000 }),
    /** The URL and content hash of the image last fetched, to skip unchanged images. */
    fetchedImageUrl: varchar("fetched_image_url", { length: 2048 }),
    imageSha256: char("image_sha256", { length: 64 }),
  },
  (t) => [
    primaryKey({ columns: [t.catalogId, t.id] }),
    index("products_catalog_created").on(t.catalogId, t.createdAt),
    index("products_catalog_status").on(t.catalogId, t.status),
    index("products_queue").on(t.status, t.nextAttemptAt),
    // The claim's order: read in this order, a claim stops after its batch instead of sorting every
    // queued product (at 100k queued, a sort cost 0.37 s of MariaDB CPU per claim).
    index("products_queue_order").on(t.status, t.updatedAt),
  ],
);

/**
 * The metadata facets (search/filter-facets.ts) of the products in each catalog's search index,
 * written by the index sync (product-facets.ts): which products a selective eq/in filter can pass
 * is then one indexed read instead of a walk or scan of the vector index. `facet` is the token's
 * MD5 (a collision only adds a candidate, which the exact filter drops).
 */
export const productFacets = mysqlTable(
  "product_facets",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    facet: binary("facet", { length: 16 }).notNull(),
    productId: productId("product_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.catalogId, t.productId, t.facet] }), index("product_facets_facet").on(t.catalogId, t.facet)],
);

/**
 * The embeddings of each processed product. MySQL is their source of truth: vector indexes are
 * rebuilt from here without recomputing anything.
 */
export const productEmbeddings = mysqlTable(
  "product_embeddings",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    productId: productId("product_id").notNull(),
    modelVersion: varchar("model_version", { length: 200 }).notNull(),
    imageSha256: char("image_sha256", { length: 64 }).notNull(),
    image: vectorBlob("image").notNull(),
    colour: vectorBlob("colour").notNull(),
    text: vectorBlob("text").notNull(),
    /** The text vector is not all zero (the descriptor has known words): the product can teach a text-image map. */
    described: boolean("described").notNull().default(true),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.catalogId, t.productId] }),
    // Counting a catalog's described products (does its map need a refit?) reads this index only.
    index("product_embeddings_described").on(t.catalogId, t.modelVersion, t.described),
  ],
);

export const apiKeys = mysqlTable(
  "api_keys",
  {
    id: char("id", { length: 12 }).primaryKey(),
    organizationId: char("organization_id", { length: 36 }).notNull(),
    name: varchar("name", { length: 200 }).notNull(),
    scopes: json("scopes").$type<Scope[]>().notNull(),
    secretHash: char("secret_hash", { length: 64 }).notNull(),
    createdAt: timestamp("created_at").notNull(),
    expiresAt: timestamp("expires_at"),
    revokedAt: timestamp("revoked_at"),
    /** Null: the service's default limit applies. */
    rateLimitPerSecond: int("rate_limit_per_second", { unsigned: true }),
  },
  (t) => [index("api_keys_organization").on(t.organizationId)],
);

/**
 * Each catalog's text-to-image map (see embeddings/text-image-map.ts), learned from the catalog's
 * own photos and descriptors and refitted as the catalog grows.
 */
export const catalogTextMaps = mysqlTable("catalog_text_maps", {
  catalogId: char("catalog_id", { length: 36 }).primaryKey(),
  /** The embeddings' model version and the fitting recipe; any other means refit. */
  modelVersion: varchar("model_version", { length: 200 }).notNull(),
  /** Samples the map was fitted on (at most the fit's sample cap). */
  trainedOn: int("trained_on", { unsigned: true }).notNull(),
  /** Described products the catalog had when the map was fitted: the refit schedule's yardstick. */
  describedAtFit: int("described_at_fit", { unsigned: true }).notNull().default(0),
  /**
   * Maps written before chunked storage, in one value. A map is several MB; one statement carrying
   * it crossed MariaDB's default max_allowed_packet, so maps now live in catalog_text_map_chunks.
   */
  map: vectorBlob("map"),
  /** Which chunks hold the map (null: the legacy `map` column does). */
  generation: int("generation", { unsigned: true }),
  /** The map's size in bytes. */
  bytes: int("bytes", { unsigned: true }).notNull().default(0),
  updatedAt: timestamp("updated_at").notNull(),
});

/**
 * A map's bytes in pieces small enough for any server's max_allowed_packet (MySQL 5.7's 4 MB
 * included, hex-escaped by a text-protocol client or not). A new map is written under a new
 * generation in the same transaction that points catalog_text_maps at it and drops the old one.
 */
export const catalogTextMapChunks = mysqlTable(
  "catalog_text_map_chunks",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    generation: int("generation", { unsigned: true }).notNull(),
    seq: int("seq", { unsigned: true }).notNull(),
    bytes: vectorBlob("bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.catalogId, t.generation, t.seq] })],
);

/** The last map fit that failed, per catalog: what the refit back-off and operators read. */
export const catalogTextMapFailures = mysqlTable("catalog_text_map_failures", {
  catalogId: char("catalog_id", { length: 36 }).primaryKey(),
  /** Failed attempts in a row; the next waits longer. */
  failures: int("failures", { unsigned: true }).notNull(),
  /** A short reason: the error's type and code, never its values. */
  reason: varchar("reason", { length: 300 }).notNull(),
  failedAt: timestamp("failed_at").notNull(),
  retryAt: timestamp("retry_at").notNull(),
});

/**
 * Products whose entry in the vector index must be brought in line with MySQL. A row is written in
 * the same transaction as the change (processed, replaced, re-ranked, deleted), so a change can
 * never be committed without the index learning of it, whatever crashes in between.
 */
export const indexQueue = mysqlTable(
  "index_queue",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    productId: productId("product_id").notNull(),
    /** Bumped when the product changes again; a sync only removes the row at the version it applied. */
    version: int("version", { unsigned: true }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.catalogId, t.productId] })],
);

/** One row per search or recommendation request: what was asked, by which session, and how it went. */
export const searchLog = mysqlTable(
  "search_log",
  {
    id: bigint("id", { mode: "number", unsigned: true }).autoincrement().primaryKey(),
    organizationId: char("organization_id", { length: 36 }).notNull(),
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    kind: mysqlEnum("kind", ["search", "recommendations"]).notNull(),
    query: varchar("query", { length: 1000 }),
    productId: productId("product_id"),
    topK: int("top_k", { unsigned: true }).notNull(),
    visualWeight: double("visual_weight").notNull(),
    filters: json("filters").$type<unknown[]>().notNull(),
    resultCount: int("result_count", { unsigned: true }).notNull(),
    tookMs: double("took_ms").notNull(),
    sessionId: varchar("session_id", { length: 200 }),
    ipAddress: varchar("ip_address", { length: 64 }),
    userAgent: varchar("user_agent", { length: 1000 }),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("search_log_catalog_created").on(t.catalogId, t.createdAt)],
);
