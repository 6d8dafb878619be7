// `vitrine import`: a CSV or JSONL file of products into a catalog, in batches, with a progress
// bar and a summary of what failed. A batch the service refuses because of one product (the
// message names products[i]) is sent again without it, so one bad row never sinks its neighbours.
import { createClient } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import cliProgress from "cli-progress";
import { CatalogService } from "../../gen/vitrine/v1/catalog_service_pb.js";
import { ProductService } from "../../gen/vitrine/v1/product_service_pb.js";
import { required, UsageError } from "./context.js";
import type { CliContext } from "./context.js";
import { readProducts } from "./product-file.js";
import type { ProductRow } from "./product-file.js";

export const IMPORT_HELP = `vitrine import: load a file of products into a catalog (organization key with write scope)

  vitrine import --org <uuid> --catalog <uuid> --file products.csv|products.jsonl [--batch 500] [--wait]

JSONL: one object per line, as in Create Products: {"id","imageUrl","descriptor","metadata"}.
CSV: a header row with id, imageUrl (or image_url), descriptor; a metadata column may hold a JSON
object; every other column becomes a metadata field: numbers (40, 9.5) and true/false are stored
typed, anything else as text; a header "name:string", "name:number" or "name:boolean" fixes the type.
Products are sent in batches (default 500, at most the service's MAX_BATCH_SIZE). A product the
service refuses is reported with its row and the reason, and the rest of its batch is sent again
without it. --wait then follows processing until every product is PROCESSED or ERROR.
Exit code 0 when every row was accepted, 1 otherwise.`;

export interface ImportOptions {
  org?: string | undefined;
  catalog?: string | undefined;
  file?: string | undefined;
  batch?: string | undefined;
  wait?: boolean | undefined;
}

interface Failure {
  row: number;
  id: string;
  reason: string;
}

export async function importCommand(options: ImportOptions, context: CliContext): Promise<number> {
  const organizationId = required(options.org, "--org");
  const catalogId = required(options.catalog, "--catalog");
  const file = required(options.file, "--file");
  const batchSize = Number(options.batch ?? 500);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new UsageError("--batch must be a positive integer");

  const products = createClient(ProductService, context.transport);
  const auth = context.orgKey();
  const failures: Failure[] = [];
  let accepted = 0;
  let read = 0;
  const bar = progressBar("importing");
  bar.start(0, 0, { detail: "" });

  const send = async (batch: ProductRow[]) => {
    let pending = batch;
    while (pending.length > 0) {
      try {
        const response = await products.createProducts({ organizationId, catalogId, products: pending.map((r) => ({ ...r.product, catalogId })) }, auth);
        accepted += response.count;
        return;
      } catch (error) {
        const index = offendingIndex(error, pending.length);
        if (index === undefined) throw error;
        const bad = pending[index]!;
        failures.push({ row: bad.row, id: bad.product.id, reason: (error as ConnectError).rawMessage.replace(/^products\[\d+\]\.?/, "") });
        pending = pending.filter((_, i) => i !== index);
      } finally {
        bar.update(accepted + failures.length, { detail: `${failures.length} failed` });
      }
    }
  };

  let batch: ProductRow[] = [];
  for await (const result of readProducts(file)) {
    read++;
    bar.setTotal(read);
    if ("error" in result) {
      failures.push({ row: result.row, id: "", reason: result.error });
      continue;
    }
    batch.push(result);
    if (batch.length === batchSize) {
      await send(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await send(batch);
  bar.update(accepted + failures.length, { detail: `${failures.length} failed` });
  bar.stop();

  console.log(`${accepted} of ${read} products accepted into catalog ${catalogId}${failures.length ? `; ${failures.length} failed:` : ""}`);
  for (const f of failures.sort((a, b) => a.row - b.row)) console.log(`  row ${f.row}${f.id ? ` (${f.id})` : ""}: ${f.reason}`);
  if (options.wait && accepted > 0) await followProcessing(context, organizationId, catalogId);
  return failures.length === 0 ? 0 : 1;
}

/** The batch item a 400 names ("products[3].imageUrl must be ..."), if it names one. */
function offendingIndex(error: unknown, length: number): number | undefined {
  if (!(error instanceof ConnectError) || error.code !== Code.InvalidArgument) return undefined;
  const match = /^products\[(\d+)\]/.exec(error.rawMessage);
  const index = match ? Number(match[1]) : NaN;
  return index < length ? index : undefined;
}

async function followProcessing(context: CliContext, organizationId: string, catalogId: string): Promise<void> {
  const catalogs = createClient(CatalogService, context.transport);
  const bar = progressBar("processing");
  let started = false;
  for (;;) {
    const p = await catalogs.getCatalogProgress({ organizationId, catalogId }, context.orgKey());
    if (!started) bar.start(p.total, 0, { detail: "" });
    started = true;
    bar.setTotal(p.total);
    bar.update(p.processed + p.error, { detail: `${p.error} in error` });
    if (p.processing === 0) {
      bar.stop();
      console.log(`processing done: ${p.processed} processed, ${p.error} in error`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function progressBar(label: string): cliProgress.SingleBar {
  // On a terminal the bar redraws in place; otherwise (a log, CI) it prints nothing until the summary.
  return new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} {detail}`, stream: process.stderr, noTTYOutput: false, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
}
