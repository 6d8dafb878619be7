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
 * hold a JSON object; every other column becomes a metadata field, typed (see `cellValue`), so
 * that numeric filters (`price lte 80`) see numbers.
 */
async function* readCsv(path: string): AsyncGenerator<RowResult> {
  const parser = createReadStream(path).pipe(parse({ columns: true, bom: true, skip_empty_lines: true, trim: true }));
  let row = 0;
  for await (const record of parser as AsyncIterable<Record<string, string>>) {
    row++;
    const { id = "", imageUrl, image_url, descriptor = "", metadata: metadataJson, ...rest } = record;
    let metadata: JsonObject = {};
    try {
      for (const [header, cell] of Object.entries(rest)) {
        const { name, type } = metadataColumn(header);
        metadata[name] = cellValue(cell, type, name);
      }
      if (metadataJson) {
        const parsed = parseMetadataColumn(metadataJson);
        metadata = { ...metadata, ...(parsed as JsonObject) };
      }
    } catch (error) {
      yield { row, error: (error as Error).message };
      continue;
    }
    yield { row, product: { id, imageUrl: imageUrl ?? image_url ?? "", descriptor, metadata } };
  }
}

function parseMetadataColumn(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`metadata column: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("metadata column: not a JSON object");
  return parsed;
}

type ColumnType = "string" | "number" | "boolean" | "infer";

/** A header `price:number` names the field `price` and fixes its type; a plain `price` infers it per cell. */
function metadataColumn(header: string): { name: string; type: ColumnType } {
  const match = /^(.*):(string|number|boolean)$/.exec(header);
  return match ? { name: match[1]!, type: match[2] as ColumnType } : { name: header, type: "infer" };
}

/** A number as JSON writes it, without leading zeros, so codes like "00123" stay text. */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A cell's value. Inferred: a JSON number that survives the round trip (integers beyond 2^53 and
 * zip codes stay text), `true` / `false`, anything else (empty cells too) as text. A typed column
 * refuses a cell that is not of its type, naming the column.
 */
function cellValue(cell: string, type: ColumnType, column: string): string | number | boolean {
  const number = JSON_NUMBER.test(cell) ? Number(cell) : undefined;
  const isNumber = number !== undefined && Number.isFinite(number) && !(Number.isInteger(number) && !Number.isSafeInteger(number));
  const isBoolean = cell === "true" || cell === "false";
  switch (type) {
    case "string":
      return cell;
    case "number":
      if (!isNumber) throw new Error(`column ${column}: ${JSON.stringify(cell)} is not a number`);
      return number;
    case "boolean":
      if (!isBoolean) throw new Error(`column ${column}: ${JSON.stringify(cell)} is not true or false`);
      return cell === "true";
    case "infer":
      if (isNumber) return number;
      if (isBoolean) return cell === "true";
      return cell;
  }
}
