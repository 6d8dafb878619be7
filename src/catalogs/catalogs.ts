import { randomUUID } from "node:crypto";
import { alreadyExists, notFound } from "../errors/index.js";
import { catalogStatus, emptyStatusCounts, productCount } from "./model.js";
import type { Catalog, CatalogRecord, CatalogStatus, StatusCounts, TextImageMapStatus } from "./model.js";
import type { CatalogRepository, ProductRepository } from "./repositories.js";
import { parseCatalogDescription, parseCatalogName, parseUuid } from "./validation.js";
import { NO_CATALOG_EVENTS } from "./events.js";
import type { CatalogEvents } from "./events.js";

export class Catalogs {
  constructor(
    private readonly catalogs: CatalogRepository,
    private readonly products: ProductRepository,
    private readonly events: CatalogEvents = NO_CATALOG_EVENTS,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async create(organizationId: string, input: { name: string; description: string }): Promise<Catalog> {
    const orgId = parseUuid(organizationId, "organizationId");
    const name = parseCatalogName(input.name);
    const description = parseCatalogDescription(input.description);
    const now = this.now();
    const record: CatalogRecord = { id: randomUUID(), organizationId: orgId, name, description, createdAt: now, updatedAt: now };
    if ((await this.catalogs.create(record)) === "name_taken") throw nameTaken(name);
    return { ...record, productCount: 0, status: "EMPTY" };
  }

  async get(organizationId: string, catalogId: string): Promise<Catalog> {
    const record = await this.requireActive(organizationId, catalogId);
    return (await this.withCounts([record]))[0]!;
  }

  /** How many products are in each status, for watching processing. */
  async progress(
    organizationId: string,
    catalogId: string,
  ): Promise<{ status: CatalogStatus; total: number; counts: StatusCounts; textImageMap: TextImageMapStatus }> {
    const record = await this.requireActive(organizationId, catalogId);
    const [byCatalog, textImageMap] = await Promise.all([this.products.countByStatus([record.id]), this.catalogs.textImageMap(record.id)]);
    const counts = byCatalog.get(record.id) ?? emptyStatusCounts();
    return { status: catalogStatus(counts), total: productCount(counts), counts, textImageMap };
  }

  async list(organizationId: string): Promise<Catalog[]> {
    const records = await this.catalogs.listActive(parseUuid(organizationId, "organizationId"));
    return this.withCounts(records);
  }

  async update(
    organizationId: string,
    catalogId: string,
    input: { name?: string | undefined; description?: string | undefined },
  ): Promise<Catalog> {
    const orgId = parseUuid(organizationId, "organizationId");
    const id = parseUuid(catalogId, "id");
    const changes: { name?: string; description?: string } = {};
    if (input.name !== undefined) changes.name = parseCatalogName(input.name);
    if (input.description !== undefined) changes.description = parseCatalogDescription(input.description);
    const outcome = await this.catalogs.update(orgId, id, changes, this.now());
    if (outcome === "not_found") throw catalogNotFound(id);
    if (outcome === "name_taken") throw nameTaken(changes.name ?? "");
    return this.get(orgId, id);
  }

  async delete(organizationId: string, catalogId: string): Promise<void> {
    const orgId = parseUuid(organizationId, "organizationId");
    const id = parseUuid(catalogId, "catalogId");
    if (!(await this.catalogs.softDelete(orgId, id, this.now()))) throw catalogNotFound(id);
    await this.events.searchableChanged(id);
  }

  /** The active catalog of the organization, or not_found: never another organization's. */
  async requireActive(organizationId: string, catalogId: string): Promise<CatalogRecord> {
    const orgId = parseUuid(organizationId, "organizationId");
    const id = parseUuid(catalogId, "catalogId");
    const record = await this.catalogs.findActive(orgId, id);
    if (!record) throw catalogNotFound(id);
    return record;
  }

  private async withCounts(records: CatalogRecord[]): Promise<Catalog[]> {
    const counts = await this.products.countByStatus(records.map((r) => r.id));
    return records.map((record) => {
      const c = counts.get(record.id) ?? emptyStatusCounts();
      return { ...record, productCount: productCount(c), status: catalogStatus(c) };
    });
  }
}

const catalogNotFound = (id: string) => notFound(`catalog ${id} not found in this organization`);

const nameTaken = (name: string) =>
  alreadyExists(`a catalog named ${JSON.stringify(name)} already exists in this organization; choose another name`);
