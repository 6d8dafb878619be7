import { customType, char, datetime, index, json, mysqlEnum, mysqlTable, primaryKey, text, uniqueIndex, varchar } from "drizzle-orm/mysql-core";
import type { JsonObject, ProductStatus, Rank } from "../../catalogs/index.js";
import { PRODUCT_STATUSES, RANKS } from "../../catalogs/index.js";
import type { Scope } from "../../auth/index.js";

/** Millisecond precision, always UTC (the pool runs with timezone Z). */
const timestamp = (name: string) => datetime(name, { mode: "date", fsp: 3 });

/** SKUs are case-sensitive and ASCII (see PRODUCT_ID_PATTERN): a binary ASCII column compares them exactly. */
const productId = customType<{ data: string }>({ dataType: () => "varchar(128) CHARACTER SET ascii COLLATE ascii_bin" });

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
  },
  (t) => [uniqueIndex("catalogs_org_name_active").on(t.organizationId, t.name, t.deletionMarker)],
);

export const products = mysqlTable(
  "products",
  {
    catalogId: char("catalog_id", { length: 36 }).notNull(),
    id: productId("id").notNull(),
    imageUrl: varchar("image_url", { length: 2048 }).notNull(),
    objectUrl: varchar("object_url", { length: 2048 }),
    descriptor: text("descriptor").notNull(),
    metadata: json("metadata").$type<JsonObject>().notNull(),
    status: mysqlEnum("status", PRODUCT_STATUSES).$type<ProductStatus>().notNull(),
    rank: mysqlEnum("rank", RANKS).$type<Rank>().notNull().default("NO_BOOST"),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.catalogId, t.id] }),
    index("products_catalog_created").on(t.catalogId, t.createdAt),
    index("products_catalog_status").on(t.catalogId, t.status),
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
  },
  (t) => [index("api_keys_organization").on(t.organizationId)],
);
