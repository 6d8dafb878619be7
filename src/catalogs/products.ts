import { invalidArgument, notFound } from "../errors/index.js";
import type { Catalogs } from "./catalogs.js";
import { NO_CATALOG_EVENTS } from "./events.js";
import type { CatalogEvents } from "./events.js";
import { FIELD_LIMITS } from "./limits.js";
import { PRODUCT_STATUSES, RANKS } from "./model.js";
import type { Product, ProductStatus, Rank } from "./model.js";
import type { ProductQuery, ProductRepository } from "./repositories.js";
import { parseProductBatch, parseProductId } from "./validation.js";
import type { ProductInput } from "./validation.js";

export interface ListProductsInput {
  page?: number | undefined;
  pageSize?: number | undefined;
  search?: string | undefined;
  rank?: string | undefined;
  status?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export interface ProductPage {
  items: Product[];
  totalItems: number;
  totalPages: number;
  page: number;
  pageSize: number;
}

export class Products {
  constructor(
    private readonly catalogs: Catalogs,
    private readonly products: ProductRepository,
    private readonly limits: { maxBatchSize: number },
    private readonly events: CatalogEvents = NO_CATALOG_EVENTS,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Validates the whole batch first; writes all of it or nothing. Returns the count accepted. */
  async create(organizationId: string, catalogId: string, inputs: ProductInput[]): Promise<number> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    const batch = parseProductBatch(inputs, catalog.id, this.limits.maxBatchSize);
    await this.products.upsertBatch(catalog.id, batch, this.now());
    this.events.productsQueued();
    // Replaced products are PROCESSING again: out of search until processed.
    await this.events.searchableChanged(catalog.id);
    return batch.length;
  }

  async list(organizationId: string, catalogId: string, input: ListProductsInput): Promise<ProductPage> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    const query = parseListQuery(input);
    const { items, total } = await this.products.list(catalog.id, query);
    return {
      items,
      totalItems: total,
      totalPages: Math.ceil(total / query.pageSize),
      page: query.page,
      pageSize: query.pageSize,
    };
  }

  async get(organizationId: string, catalogId: string, productId: string): Promise<Product> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    const id = parseProductId(productId);
    const product = await this.products.get(catalog.id, id);
    if (!product) throw productNotFound(id, catalog.id);
    return product;
  }

  /** Deletes the listed products; an empty list deletes every product of the catalog. */
  async deleteMany(organizationId: string, catalogId: string, productIds: string[]): Promise<number> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    productIds.forEach((id, index) => parseProductId(id, `productIds[${index}]`));
    const deleted = await this.products.delete(catalog.id, productIds.length === 0 ? undefined : [...new Set(productIds)]);
    await this.events.searchableChanged(catalog.id);
    return deleted;
  }

  async deleteOne(organizationId: string, catalogId: string, productId: string): Promise<void> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    const id = parseProductId(productId);
    if ((await this.products.delete(catalog.id, [id])) === 0) throw productNotFound(id, catalog.id);
    await this.events.searchableChanged(catalog.id);
  }

  async setRank(organizationId: string, catalogId: string, productId: string, rank: string): Promise<Rank> {
    const catalog = await this.catalogs.requireActive(organizationId, catalogId);
    const id = parseProductId(productId);
    const level = parseEnum(rank, RANKS, "rank");
    if (level === undefined) throw invalidArgument(`rank is required: one of ${RANKS.join(", ")}`);
    if (!(await this.products.setRank(catalog.id, id, level, this.now()))) throw productNotFound(id, catalog.id);
    // The boost takes effect in the very next query.
    await this.events.searchableChanged(catalog.id);
    return level;
  }
}

function parseListQuery(input: ListProductsInput): ProductQuery {
  const page = input.page ?? 1;
  if (!Number.isInteger(page) || page < 1) throw invalidArgument(`page must be an integer >= 1, got ${page}`);
  const pageSize = input.pageSize ?? FIELD_LIMITS.defaultPageSize;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > FIELD_LIMITS.maxPageSize) {
    throw invalidArgument(`page_size must be an integer from 1 to ${FIELD_LIMITS.maxPageSize}, got ${pageSize}`);
  }
  const search = input.search?.trim().toLowerCase() || undefined;
  if (search !== undefined && search.length > FIELD_LIMITS.searchTermLength) {
    throw invalidArgument(`search must be at most ${FIELD_LIMITS.searchTermLength} characters`);
  }
  const { createdAfter, createdBefore } = input;
  if (createdAfter && createdBefore && createdAfter >= createdBefore) {
    throw invalidArgument("created_after must be earlier than created_before");
  }
  return {
    page,
    pageSize,
    search,
    rank: parseEnum(input.rank, RANKS, "rank"),
    status: parseEnum<ProductStatus>(input.status, PRODUCT_STATUSES, "status"),
    createdAfter,
    createdBefore,
  };
}

function parseEnum<T extends string>(value: string | undefined, allowed: readonly T[], field: string): T | undefined {
  if (value === undefined || value === "") return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw invalidArgument(`${field} must be one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`);
}

const productNotFound = (id: string, catalogId: string) => notFound(`product ${id} not found in catalog ${catalogId}`);
