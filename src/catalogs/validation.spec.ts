import { describe, expect, it } from "vitest";
import { AppError } from "../errors/index.js";
import { parseProductBatch, parseUuid, productIdProblem } from "./validation.js";

const CATALOG = "0b5c2f7e-1d44-4c1e-9f0a-2a4d9b6e8c11";
const item = (over: Record<string, unknown> = {}) => ({
  id: "sku-1",
  catalogId: "",
  imageUrl: "https://img.example/sku-1.jpg",
  descriptor: "Red Shoe",
  metadata: { colour: "red" },
  ...over,
});

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).kind).toBe("invalid_argument");
    return (error as AppError).message;
  }
  throw new Error("expected an invalid_argument error");
}

describe("parseUuid", () => {
  it("canonicalises case", () => {
    expect(parseUuid(CATALOG.toUpperCase(), "catalogId")).toBe(CATALOG);
  });
  it("names the field", () => {
    expect(messageOf(() => parseUuid("nope", "catalogId"))).toMatch(/^catalogId must be a UUID/);
    expect(messageOf(() => parseUuid("", "organizationId"))).toBe("organizationId is required");
  });
});

describe("productIdProblem", () => {
  it.each(["a", "SKU-123", "x.y_z~1", "9".repeat(128)])("accepts %s", (id) => {
    expect(productIdProblem(id)).toBeUndefined();
  });
  it.each(["", "-lead", "has space", "sl/ash", "é", "9".repeat(129)])("rejects %j", (id) => {
    expect(productIdProblem(id)).toBeDefined();
  });
});

describe("parseProductBatch", () => {
  it("lowercases descriptors and defaults metadata", () => {
    const [p] = parseProductBatch([item({ metadata: undefined })], CATALOG, 10);
    expect(p).toEqual({ id: "sku-1", imageUrl: "https://img.example/sku-1.jpg", descriptor: "red shoe", metadata: {} });
  });
  it("names the index and field of the first bad item", () => {
    const batch = [item(), item({ id: "sku-2", imageUrl: "ftp://x/y.jpg" })];
    expect(messageOf(() => parseProductBatch(batch, CATALOG, 10))).toBe(
      "products[1].imageUrl must be an http or https URL",
    );
  });
  it("refuses a catalogId that differs from the path, accepts it in another case", () => {
    expect(parseProductBatch([item({ catalogId: CATALOG.toUpperCase() })], CATALOG, 10)).toHaveLength(1);
    expect(messageOf(() => parseProductBatch([item({ catalogId: "other" })], CATALOG, 10))).toMatch(
      /^products\[0\]\.catalogId .* does not match the catalog in the path/,
    );
  });
  it("refuses repeated ids, empty batches and oversize batches", () => {
    expect(messageOf(() => parseProductBatch([item(), item()], CATALOG, 10))).toBe(
      "products[1].id repeats the id of products[0] (sku-1)",
    );
    expect(messageOf(() => parseProductBatch([], CATALOG, 10))).toMatch(/empty/);
    expect(messageOf(() => parseProductBatch([item(), item({ id: "b" })], CATALOG, 1))).toMatch(/at most 1/);
  });
  it("bounds metadata size", () => {
    const big = { blob: "x".repeat(17 * 1024) };
    expect(messageOf(() => parseProductBatch([item({ metadata: big })], CATALOG, 10))).toMatch(/^products\[0\]\.metadata is \d+ bytes/);
  });
});
