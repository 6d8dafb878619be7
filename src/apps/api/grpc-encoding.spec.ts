// The gRPC port's protobufjs encoder must write exactly what protobuf-es's toBinary writes, for every
// answer of every service, or leave the message to toBinary.
import { create, ScalarType, toBinary } from "@bufbuild/protobuf";
import type { DescField, DescMessage, JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { GetRecommendationsResponseSchema } from "../../gen/vitrine/v1/recommendation_service_pb.js";
import { SearchProductsResponseSchema } from "../../gen/vitrine/v1/search_service_pb.js";
import { SERVICES } from "../../rpc/index.js";
import { seededRandom } from "../../../test/support/random.js";
import { answerEncoder, ownEncoder } from "./grpc-encoding.js";

const random = seededRandom(14);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const count = (max: number) => Math.floor(random() * (max + 1));

const STRINGS = ["", "a", "red summer dress", "é", "日本語", "😀", "\ud800", "x\udc00y", "a".repeat(127), "ü".repeat(70), "b".repeat(20_000)];
const NUMBERS = [0, -0, 1, -1, 0.5, 1e-300, 1e300, Number.NaN, Infinity, -Infinity, 2 ** 31 - 1, -(2 ** 31)];

function json(depth: number): JsonValue {
  switch (depth > 3 ? count(3) : count(5)) {
    case 0:
      return null;
    case 1:
      return pick(NUMBERS);
    case 2:
      return pick(STRINGS);
    case 3:
      return random() < 0.5;
    case 4:
      return Array.from({ length: count(4) }, () => json(depth + 1));
    default:
      return object(depth + 1);
  }
}

function object(depth: number): { [key: string]: JsonValue } {
  return Object.fromEntries(Array.from({ length: count(6) }, () => [pick(STRINGS).slice(0, 200), json(depth)]));
}

function scalar(type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return pick(STRINGS);
    case ScalarType.BOOL:
      return random() < 0.5;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return pick(NUMBERS);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick([0n, 1n, -1n, 1_700_000_000n, -(2n ** 63n)]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick([0n, 1n, 2n ** 64n - 1n]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick([0, 1, 127, 128, 2 ** 32 - 1]);
    case ScalarType.BYTES:
      return Uint8Array.from([1, 2, 3]).subarray(0, count(3));
    default:
      return pick([0, 1, -1, 127, 128, 300, 2 ** 31 - 1, -(2 ** 31)]);
  }
}

function value(field: DescField, depth: number): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field.scalar);
    case "enum":
      return pick(field.enum.values).number;
    case "message":
      return field.message.typeName === "google.protobuf.Struct" ? object(0) : message(field.message, depth + 1);
    case "list":
      return Array.from({ length: depth > 2 ? 1 : count(12) }, () =>
        field.listKind === "scalar" ? scalar(field.scalar) : field.listKind === "enum" ? pick(field.enum.values).number : message(field.message, depth + 1),
      );
    case "map":
      return Object.fromEntries(
        Array.from({ length: count(3) }, () => [pick(STRINGS).slice(0, 20), field.mapKind === "message" ? message(field.message, depth + 1) : scalar(field.scalar!)]),
      );
  }
}

/** A message of `schema` with a random subset of its fields set to random values, edge cases included. */
function message(schema: DescMessage, depth = 0): object {
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    if (field.oneof !== undefined || random() < 0.2) continue;
    init[field.localName] = value(field, depth);
  }
  for (const oneof of schema.oneofs) {
    if (random() < 0.3) continue;
    const field = pick(oneof.fields);
    init[oneof.localName] = { case: field.localName, value: value(field, depth) };
  }
  return create(schema, init as never);
}

const ANSWERS = [...SERVICES, Health].flatMap((service) => service.methods.map((method) => method.output));

/** Byte equality, with the first difference in the message when there is one (toEqual on large buffers is slow). */
function expectSameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  const a = Buffer.from(actual);
  const b = Buffer.from(expected);
  if (a.equals(b)) return;
  const at = [...a].findIndex((byte, i) => byte !== b[i]);
  expect.fail(`${what}: ${a.length} bytes against toBinary's ${b.length}, first difference at ${at}`);
}

describe("answerEncoder", () => {
  it("encodes the search answers with protobufjs", () => {
    expect(ownEncoder(SearchProductsResponseSchema)).toBeDefined();
    expect(ownEncoder(GetRecommendationsResponseSchema)).toBeDefined();
  });

  it("writes toBinary's bytes for every answer of every service", () => {
    for (const schema of ANSWERS) {
      const encode = answerEncoder(schema);
      expectSameBytes(encode(create(schema)), toBinary(schema, create(schema)), schema.typeName);
      for (let i = 0; i < 40; i++) {
        const answer = message(schema);
        expectSameBytes(encode(answer), toBinary(schema, answer as never), schema.typeName);
      }
    }
  });

  it("leaves a value its field does not declare to toBinary, whose answer or refusal stands", () => {
    const encode = answerEncoder(SearchProductsResponseSchema);
    const odd = [
      { results: [{ productId: "p", score: "high" }] },
      { results: [{ productId: 7 }] },
      { status: 5 },
      { results: [{ productId: "p", metadata: [1, 2] }] },
    ];
    for (const fields of odd) {
      const answer = { ...create(SearchProductsResponseSchema), ...fields } as never;
      let expected: unknown;
      try {
        expected = Buffer.from(toBinary(SearchProductsResponseSchema, answer));
      } catch (error) {
        expect(() => encode(answer)).toThrow((error as Error).message);
        continue;
      }
      expectSameBytes(encode(answer), expected as Buffer, JSON.stringify(fields));
    }
  });

  it("writes a search answer of many results with large metadata", () => {
    const encode = answerEncoder(SearchProductsResponseSchema);
    const answer = create(SearchProductsResponseSchema, {
      status: "success",
      results: Array.from({ length: 200 }, (_, i) => ({ productId: `sku-${i}`, score: 1 / (i + 1), metadata: { description: "d".repeat(i * 100), tags: ["a", "b"], nested: { n: i } } })),
    });
    expectSameBytes(encode(answer), toBinary(SearchProductsResponseSchema, answer), "200 results");
  });
});
