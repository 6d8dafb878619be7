import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import {
  ApiKeyService,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RevokeApiKeyResponseSchema,
} from "../../gen/vitrine/v1/api_key_service_pb.js";
import { printJson, required, UsageError } from "./context.js";
import type { CliContext } from "./context.js";

export const KEYS_HELP = `vitrine keys: organization API keys (admin key required)

  vitrine keys create --org <uuid> --scopes read,write,search [--name <text>] [--expires <RFC 3339>]
                      [--rate-limit <calls per second; 0: none>]
  vitrine keys list   --org <uuid>
  vitrine keys revoke --org <uuid> --key <key id>

The created key's secret is printed once; store it, the service keeps only its hash. Without
--rate-limit the key has the service's default limit (RATE_LIMIT_PER_SECOND).`;

export interface KeysOptions {
  org?: string | undefined;
  scopes?: string | undefined;
  name?: string | undefined;
  expires?: string | undefined;
  "rate-limit"?: string | undefined;
  key?: string | undefined;
}

export async function keysCommand(command: string | undefined, options: KeysOptions, context: CliContext): Promise<void> {
  const client = createClient(ApiKeyService, context.transport);
  const organizationId = required(options.org, "--org");
  switch (command) {
    case "create": {
      const expires = options.expires ? new Date(options.expires) : undefined;
      if (expires && Number.isNaN(expires.getTime())) throw new UsageError("--expires must be an RFC 3339 date-time");
      const scopes = required(options.scopes, "--scopes").split(",").map((s) => s.trim()).filter(Boolean);
      const rateLimit = options["rate-limit"] === undefined ? undefined : Number(options["rate-limit"]);
      if (rateLimit !== undefined && !Number.isInteger(rateLimit)) throw new UsageError("--rate-limit must be a whole number of calls per second");
      const request = { organizationId, name: options.name ?? "", scopes, expiresAt: expires && timestampFromDate(expires), rateLimitPerSecond: rateLimit };
      printJson(CreateApiKeyResponseSchema, await client.createApiKey(request, context.adminKey()));
      return;
    }
    case "list":
      printJson(ListApiKeysResponseSchema, await client.listApiKeys({ organizationId }, context.adminKey()));
      return;
    case "revoke": {
      const keyId = required(options.key, "--key");
      printJson(RevokeApiKeyResponseSchema, await client.revokeApiKey({ organizationId, keyId }, context.adminKey()));
      return;
    }
    default:
      throw new UsageError(`unknown command "keys ${command ?? ""}"`);
  }
}
