#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { toJson } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  ApiKeyService,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RevokeApiKeyResponseSchema,
} from "../gen/vitrine/v1/api_key_service_pb.js";
import { CatalogService, ReindexCatalogResponseSchema } from "../gen/vitrine/v1/catalog_service_pb.js";

const HELP = `vitrine: command-line client of a running Vitrine service

Usage:
  vitrine keys create --org <uuid> --scopes read,write,search [--name <text>] [--expires <RFC 3339>]
  vitrine keys list   --org <uuid>
  vitrine keys revoke --org <uuid> --key <key id>
  vitrine catalogs reindex --org <uuid> --catalog <uuid>

Options:
  --url <url>        service REST/Connect address (default http://127.0.0.1:$PORT, PORT default 8080)
  --admin-key <key>  admin key (default $ADMIN_API_KEY, else the key stored in $DATA_DIR/admin-api-key)
  -h, --help         this help

The created key's secret is printed once; store it, the service keeps only its hash.
reindex rebuilds a catalog's search index from the embeddings stored in MySQL (nothing is
re-embedded); the service also does this by itself when it finds the index missing or stale.`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "admin-key": { type: "string" },
      org: { type: "string" },
      scopes: { type: "string" },
      name: { type: "string" },
      expires: { type: "string" },
      key: { type: "string" },
      catalog: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [group, command] = positionals;
  if (values.help || (group !== "keys" && group !== "catalogs") || !command) {
    console.log(HELP);
    return values.help ? 0 : 2;
  }
  const baseUrl = values.url ?? `http://127.0.0.1:${process.env.PORT ?? "8080"}`;
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1" });
  const callOptions = { headers: { service_api_key: adminKey(values["admin-key"]) } };
  const organizationId = required(values.org, "--org");

  if (group === "catalogs") {
    if (command !== "reindex") throw new UsageError(`unknown command "catalogs ${command}"`);
    const catalogs = createClient(CatalogService, transport);
    const response = await catalogs.reindexCatalog({ organizationId, catalogId: required(values.catalog, "--catalog") }, callOptions);
    print(ReindexCatalogResponseSchema, response);
    return 0;
  }
  const client = createClient(ApiKeyService, transport);

  switch (command) {
    case "create": {
      const expires = values.expires ? new Date(values.expires) : undefined;
      if (expires && Number.isNaN(expires.getTime())) throw new UsageError("--expires must be an RFC 3339 date-time");
      const response = await client.createApiKey(
        {
          organizationId,
          name: values.name ?? "",
          scopes: required(values.scopes, "--scopes").split(",").map((s) => s.trim()).filter(Boolean),
          expiresAt: expires && timestampFromDate(expires),
        },
        callOptions,
      );
      print(CreateApiKeyResponseSchema, response);
      return 0;
    }
    case "list":
      print(ListApiKeysResponseSchema, await client.listApiKeys({ organizationId }, callOptions));
      return 0;
    case "revoke":
      print(
        RevokeApiKeyResponseSchema,
        await client.revokeApiKey({ organizationId, keyId: required(values.key, "--key") }, callOptions),
      );
      return 0;
    default:
      throw new UsageError(`unknown command "keys ${command}"`);
  }
}

class UsageError extends Error {}

function required(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`${flag} is required`);
  return value;
}

function adminKey(flag: string | undefined): string {
  if (flag) return flag;
  if (process.env.ADMIN_API_KEY) return process.env.ADMIN_API_KEY;
  const path = join(process.env.DATA_DIR ?? ".data", "admin-api-key");
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    throw new UsageError(`no admin key: pass --admin-key, set ADMIN_API_KEY, or run where ${path} exists`);
  }
}

function print<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  console.log(JSON.stringify(toJson(schema, message), null, 2));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${HELP}`);
      process.exit(2);
    }
    if (error instanceof ConnectError) {
      console.error(`vitrine: ${error.code === undefined ? "" : `[${error.code}] `}${error.rawMessage}`);
      process.exit(1);
    }
    console.error("vitrine:", error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
