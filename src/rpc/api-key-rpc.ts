import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ApiKeys } from "../auth/index.js";
import { ApiKeyService } from "../gen/vitrine/v1/api_key_service_pb.js";
import { apiKeyMessage } from "./messages.js";

export function apiKeyRpc(keys: ApiKeys): ServiceImpl<typeof ApiKeyService> {
  return {
    async createApiKey(req) {
      const { apiKey, key } = await keys.create(req.organizationId, {
        name: req.name,
        scopes: req.scopes,
        expiresAt: req.expiresAt && timestampDate(req.expiresAt),
        rateLimitPerSecond: req.rateLimitPerSecond,
      });
      return { apiKey: apiKeyMessage(apiKey), key };
    },
    async listApiKeys(req) {
      return { keys: (await keys.list(req.organizationId)).map(apiKeyMessage) };
    },
    async revokeApiKey(req) {
      const key = await keys.revoke(req.organizationId, req.keyId);
      return { status: "success", message: `API key ${key.id} revoked` };
    },
  };
}
