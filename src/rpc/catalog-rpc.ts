import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Catalogs } from "../catalogs/index.js";
import { Catalog_Status, CatalogService } from "../gen/vitrine/v1/catalog_service_pb.js";
import type { Searcher } from "../search/index.js";
import { catalogMessage } from "./messages.js";

export function catalogRpc(catalogs: Catalogs, search: Searcher): ServiceImpl<typeof CatalogService> {
  return {
    async reindexCatalog(req) {
      const { indexed, parts } = await search.reindex(req.organizationId, req.catalogId, req.parts);
      const split = parts > 1 ? ` in ${parts} parts` : "";
      return { status: "success", message: `search index rebuilt with ${indexed} products${split}`, indexed, parts };
    },
    async createCatalog(req) {
      const catalog = await catalogs.create(req.organizationId, req);
      return { catalog: catalogMessage(catalog) };
    },
    async listCatalogs(req) {
      const list = await catalogs.list(req.organizationId);
      return { catalogs: list.map((c) => catalogMessage(c, { status: true })) };
    },
    async getCatalog(req) {
      return { catalog: catalogMessage(await catalogs.get(req.organizationId, req.catalogId)) };
    },
    async updateCatalog(req) {
      const catalog = await catalogs.update(req.organizationId, req.id, { name: req.name, description: req.description });
      return { catalog: catalogMessage(catalog, { updatedAt: true }) };
    },
    async getCatalogProgress(req) {
      const { status, total, counts, textImageMap: map } = await catalogs.progress(req.organizationId, req.catalogId);
      return {
        status: Catalog_Status[status],
        total,
        processing: counts.PROCESSING,
        processed: counts.PROCESSED,
        error: counts.ERROR,
        textImageMap: {
          trainedOn: map.trainedOn,
          ...(map.lastFailure !== undefined ? { lastFailure: map.lastFailure } : {}),
          ...(map.fittedAt ? { fittedAt: timestampFromDate(map.fittedAt) } : {}),
          ...(map.nextAttemptAt ? { nextAttemptAt: timestampFromDate(map.nextAttemptAt) } : {}),
        },
      };
    },
    async deleteCatalog(req) {
      await catalogs.delete(req.organizationId, req.catalogId);
      return { status: "success", message: `catalog ${req.catalogId.toLowerCase()} deleted` };
    },
  };
}
