import { readFileSync } from "node:fs";
import { toJson } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { adminKeyPath, cliSettings } from "../../config/index.js";
import type { CliSettings } from "../../config/index.js";
// The module itself, not rpc/index.js: the CLI is a client and need not load the service.
import { API_KEY_HEADER } from "../../rpc/headers.js";

/** A mistake in the command line: printed with the command's help, exit code 2. */
export class UsageError extends Error {}

export interface CliOptions {
  url?: string | undefined;
  "admin-key"?: string | undefined;
  "api-key"?: string | undefined;
}

/** What every command needs: where the service is and which key to present. */
export interface CliContext {
  transport: Transport;
  /** The operator's key (keys, reindex). */
  adminKey(): { headers: Record<string, string> };
  /** An organization key (catalogs, import). */
  orgKey(): { headers: Record<string, string> };
}

export function cliContext(options: CliOptions, settings: CliSettings = cliSettings()): CliContext {
  const baseUrl = options.url ?? `http://127.0.0.1:${settings.port}`;
  return {
    transport: createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    adminKey: () => ({ headers: { [API_KEY_HEADER]: adminKey(options["admin-key"], settings) } }),
    orgKey() {
      const key = options["api-key"] ?? settings.apiKey;
      if (!key) throw new UsageError("no organization key: pass --api-key or set VITRINE_API_KEY");
      return { headers: { [API_KEY_HEADER]: key } };
    },
  };
}

function adminKey(flag: string | undefined, settings: CliSettings): string {
  if (flag) return flag;
  if (settings.adminApiKey) return settings.adminApiKey;
  const path = adminKeyPath(settings.dataDir);
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    throw new UsageError(`no admin key: pass --admin-key, set ADMIN_API_KEY, or run where ${path} exists`);
  }
}

export function required(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`${flag} is required`);
  return value;
}

export function printJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  console.log(JSON.stringify(toJson(schema, message, { alwaysEmitImplicit: true }), null, 2));
}
