import { invalidArgument } from "../errors/index.js";
import { FIELD_LIMITS, PRODUCT_ID_PATTERN } from "./limits.js";
import type { JsonObject, NewProduct } from "./model.js";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Returns the UUID in canonical lower case, or throws invalid_argument naming the field. */
export function parseUuid(value: string, field: string): string {
  if (!UUID_PATTERN.test(value)) {
    throw invalidArgument(
      value === "" ? `${field} is required` : `${field} must be a UUID, got ${JSON.stringify(clip(value))}`,
    );
  }
  return value.toLowerCase();
}

/** Problem with a product id, or undefined when it is valid. */
export function productIdProblem(id: string): string | undefined {
  if (id === "") return "is required";
  if (id.length > FIELD_LIMITS.productIdLength) return `must be at most ${FIELD_LIMITS.productIdLength} characters`;
  if (!PRODUCT_ID_PATTERN.test(id)) {
    return "may contain only letters, digits and . _ ~ - and must start with a letter or digit";
  }
  return undefined;
}

export function parseProductId(id: string, field = "productId"): string {
  const problem = productIdProblem(id);
  if (problem) throw invalidArgument(`${field} ${problem}`);
  return id;
}

export function parseCatalogName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === "") throw invalidArgument("name is required and must not be blank");
  if (trimmed.length > FIELD_LIMITS.catalogNameLength) {
    throw invalidArgument(`name must be at most ${FIELD_LIMITS.catalogNameLength} characters`);
  }
  return trimmed;
}

export function parseCatalogDescription(description: string): string {
  if (description.length > FIELD_LIMITS.catalogDescriptionLength) {
    throw invalidArgument(`description must be at most ${FIELD_LIMITS.catalogDescriptionLength} characters`);
  }
  return description;
}

/** A product as it arrives from a transport, before validation. Absent strings are "". */
export interface ProductInput {
  id: string;
  catalogId: string;
  imageUrl: string;
  descriptor: string;
  metadata?: JsonObject | undefined;
}

/**
 * Validates a whole Create Products batch before anything is written. The first problem found
 * rejects the batch, naming the item index and field so the caller can fix it.
 */
export function parseProductBatch(inputs: ProductInput[], catalogId: string, maxBatchSize: number): NewProduct[] {
  if (inputs.length === 0) throw invalidArgument("the batch is empty: send at least one product");
  if (inputs.length > maxBatchSize) {
    throw invalidArgument(
      `the batch has ${inputs.length} products; at most ${maxBatchSize} are accepted per request, split it`,
    );
  }
  const firstIndexOf = new Map<string, number>();
  return inputs.map((input, index) => {
    const fail = (field: string, problem: string) => invalidArgument(`products[${index}].${field} ${problem}`);
    const idProblem = productIdProblem(input.id);
    if (idProblem) throw fail("id", idProblem);
    const earlier = firstIndexOf.get(input.id);
    if (earlier !== undefined) throw fail("id", `repeats the id of products[${earlier}] (${input.id})`);
    firstIndexOf.set(input.id, index);
    if (input.catalogId !== "" && input.catalogId.toLowerCase() !== catalogId) {
      throw fail("catalogId", `(${clip(input.catalogId)}) does not match the catalog in the path (${catalogId})`);
    }
    const urlProblem = imageUrlProblem(input.imageUrl);
    if (urlProblem) throw fail("imageUrl", urlProblem);
    if (input.descriptor.length > FIELD_LIMITS.descriptorLength) {
      throw fail("descriptor", `must be at most ${FIELD_LIMITS.descriptorLength} characters`);
    }
    const metadata = input.metadata ?? {};
    const metadataProblem = metadataProblemOf(metadata);
    if (metadataProblem) throw fail("metadata", metadataProblem);
    return { id: input.id, imageUrl: input.imageUrl, descriptor: input.descriptor.toLowerCase(), metadata };
  });
}

function imageUrlProblem(value: string): string | undefined {
  if (value === "") return "is required";
  if (value.length > FIELD_LIMITS.imageUrlLength) return `must be at most ${FIELD_LIMITS.imageUrlLength} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `is not a valid URL: ${JSON.stringify(clip(value))}`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL";
  return undefined;
}

function metadataProblemOf(metadata: JsonObject): string | undefined {
  for (const key of Object.keys(metadata)) {
    if (key === "") return "keys must not be empty";
    if (key.length > FIELD_LIMITS.metadataKeyLength) {
      return `key ${JSON.stringify(clip(key))} is longer than ${FIELD_LIMITS.metadataKeyLength} characters`;
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(metadata));
  if (bytes > FIELD_LIMITS.metadataBytes) {
    return `is ${bytes} bytes of JSON; at most ${FIELD_LIMITS.metadataBytes} are allowed`;
  }
  return undefined;
}

/** Keeps echoed input short in error messages. */
function clip(value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value;
}
