// Reads products from a CSV or JSON Lines file, one product per row, keeping each row's number so
// failures can point at the line to fix.
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { parse } from "csv-parse";
import type { JsonObject } from "@bufbuild/protobuf";

export interface ProductRow {
  /** 1-based line (JSONL) or record (CSV, after the header) number. */
  row: number;
  product: { id: string; imageUrl: string; descriptor: string; metadata: JsonObject };
}

export type RowResult = ProductRow | { row: number; error: string };

/** Format by extension: .csv, or .jsonl / .ndjson. */
export function readProducts(path: string): AsyncGenerator<RowResult> {
  if (/\.csv$/i.test(path)) return readCsv(path);
  if (/\.(jsonl|ndjson)$/i.test(path)) return readJsonLines(path);
  throw new Error(`${path}: unknown format; use a .csv or .jsonl file`);
}

/**
 * JSONL: each line an object in the Create Products shape ({id, imageUrl, descriptor, metadata}).
 */
async function* readJsonLines(path: string): AsyncGenerator<RowResult> {
  const lines = createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity });
  let row = 0;
  for await (const line of lines) {
    row++;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      yield { row, error: `not JSON: ${(error as Error).message}` };
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      yield { row, error: "not a JSON object" };
      continue;
    }
    const o = value as Record<string, unknown>;
    yield {
      row,
      product: {
        id: String(o.id ?? ""),
        imageUrl: String(o.imageUrl ?? ""),
        descriptor: String(o.descriptor ?? ""),
        metadata: (o.metadata ?? {}) as JsonObject,
      },
    };
  }
}

/**
 * CSV with a header row: `id`, `imageUrl` (or `image_url`), `descriptor`; a `metadata` column may
 * hold a JSON object; every other column becomes a metadata field (its text as a string).
 */
async function* readCsv(path: string): AsyncGenerator<RowResult> {
  const parser = createReadStream(path).pipe(parse({ columns: true, bom: true, skip_empty_lines: true, trim: true }));
  let row = 0;
  for await (const record of parser as AsyncIterable<Record<string, string>>) {
    row++;
    const { id = "", imageUrl, image_url, descriptor = "", metadata: metadataJson, ...rest } = record;
    let metadata: JsonObject = { ...rest };
    if (metadataJson) {
      try {
        const parsed = JSON.parse(metadataJson) as unknown;
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object");
        metadata = { ...metadata, ...(parsed as JsonObject) };
      } catch (error) {
        yield { row, error: `metadata column: ${(error as Error).message}` };
        continue;
      }
    }
    yield { row, product: { id, imageUrl: imageUrl ?? image_url ?? "", descriptor, metadata } };
  }
}
