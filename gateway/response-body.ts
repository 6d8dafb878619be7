import { toJson } from "@bufbuild/protobuf";
import type { DescMessage, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { isJsonObject } from "./decode-errors.js";
import type { HttpBinding } from "./http-rules.js";

/** The JSON the gateway answers with: the whole output message, or its `response_body` field. */
export function responseJson(binding: HttpBinding, message: MessageShape<DescMessage>): JsonValue {
  // alwaysEmitImplicit: REST callers expect every documented field, so 0, "", false and [] are
  // written out; `optional` scalars and unset messages still stay absent, which is what
  // "returned by List Catalogs only" style fields rely on.
  const json = toJson(binding.method.output, message, { alwaysEmitImplicit: true });
  const field = binding.responseBody;
  if (field === undefined) return json;
  const picked = isJsonObject(json) ? json[field.jsonName] : undefined;
  if (picked !== undefined) return picked;
  switch (field.fieldKind) {
    case "list":
      return [];
    case "map":
    case "message":
      return {};
    default:
      return null;
  }
}
