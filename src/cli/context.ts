import { readFileSync } from "node:fs";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

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
  adminKey(): { headers: { service_api_key: string } };
  /** An organization key (catalogs, import). */
  orgKey(): { headers: { service_api_key: string } };
}

export function cliContext(options: CliOptions, env: NodeJS.ProcessEnv = process.env): CliContext {
  const baseUrl = options.url ?? `http://127.0.0.1:${env.PORT ?? "8080"}`;
  return {
    transport: createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    adminKey: () => ({ headers: { service_api_key: adminKey(options["admin-key"], env) } }),
    orgKey() {
      const key = options["api-key"] ?? env.VITRINE_API_KEY;
      if (!key) throw new UsageError("no organization key: pass --api-key or set VITRINE_API_KEY");
      return { headers: { service_api_key: key } };
    },
  };
}

function adminKey(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  if (flag) return flag;
  if (env.ADMIN_API_KEY) return env.ADMIN_API_KEY;
  const path = join(env.DATA_DIR ?? ".data", "admin-api-key");
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
