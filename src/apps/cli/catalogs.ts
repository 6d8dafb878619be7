import { createClient } from "@connectrpc/connect";
import {
  CatalogService,
  GetCatalogProgressResponseSchema,
  ReindexCatalogResponseSchema,
} from "../../gen/vitrine/v1/catalog_service_pb.js";
import { Catalog_Status } from "../../gen/vitrine/v1/catalog_service_pb.js";
import { printJson, required, UsageError } from "./context.js";
import type { CliContext } from "./context.js";

export const CATALOGS_HELP = `vitrine catalogs: look at catalogs and repair their search index

  vitrine catalogs list    --org <uuid>                    (organization key)
  vitrine catalogs status  --org <uuid> --catalog <uuid>   (organization key)
  vitrine catalogs reindex --org <uuid> --catalog <uuid> [--parts <1-64>]   (admin key)

status prints the processing progress: products per status. reindex rebuilds the catalog's
search index from the embeddings stored in MySQL (nothing is re-embedded); the service also does
this by itself when it finds the index missing or stale. --parts splits the index into that many
sets, searched at once (on a Redis Cluster, spread over its shards); 1 undoes a split, and without
it the catalog keeps its split.`;

export interface CatalogsOptions {
  org?: string | undefined;
  catalog?: string | undefined;
  parts?: string | undefined;
}

export async function catalogsCommand(command: string | undefined, options: CatalogsOptions, context: CliContext): Promise<void> {
  const client = createClient(CatalogService, context.transport);
  const organizationId = required(options.org, "--org");
  switch (command) {
    case "list": {
      const { catalogs } = await client.listCatalogs({ organizationId }, context.orgKey());
      const rows = catalogs.map((c) => [c.id, Catalog_Status[c.status ?? 0] ?? "", String(c.productCount), c.name]);
      printTable(["id", "status", "products", "name"], rows);
      return;
    }
    case "status": {
      const catalogId = required(options.catalog, "--catalog");
      printJson(GetCatalogProgressResponseSchema, await client.getCatalogProgress({ organizationId, catalogId }, context.orgKey()));
      return;
    }
    case "reindex": {
      const catalogId = required(options.catalog, "--catalog");
      const parts = options.parts === undefined ? undefined : Number(options.parts);
      if (parts !== undefined && !Number.isInteger(parts)) throw new UsageError(`--parts must be a whole number, got ${JSON.stringify(options.parts)}`);
      printJson(ReindexCatalogResponseSchema, await client.reindexCatalog({ organizationId, catalogId, parts }, context.adminKey()));
      return;
    }
    default:
      throw new UsageError(`unknown command "catalogs ${command ?? ""}"`);
  }
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}
