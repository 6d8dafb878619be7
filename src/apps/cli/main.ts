#!/usr/bin/env node
// `vitrine`: command-line client of a running Vitrine service (a Connect client over HTTP/1.1).
import { parseArgs } from "node:util";
import { ConnectError } from "@connectrpc/connect";
import { CATALOGS_HELP, catalogsCommand } from "./catalogs.js";
import { cliContext, UsageError } from "./context.js";
import { IMPORT_HELP, importCommand } from "./import.js";
import { KEYS_HELP, keysCommand } from "./keys.js";

const HELP = `vitrine: command-line client of a running Vitrine service

Commands:
  keys create|list|revoke        organization API keys (admin key)
  catalogs list|status|reindex   catalogs, processing progress, search index repair
  import                         load a CSV or JSONL file of products into a catalog

Options for every command:
  --url <url>          service REST/Connect address (default http://127.0.0.1:$PORT, PORT default 8080)
  --admin-key <key>    admin key (default $ADMIN_API_KEY, else the key stored in $DATA_DIR/admin-api-key)
  --api-key <key>      organization key (default $VITRINE_API_KEY)
  -h, --help           help; "vitrine <command> --help" for a command's own`;

const GROUP_HELP: Record<string, string> = { keys: KEYS_HELP, catalogs: CATALOGS_HELP, import: IMPORT_HELP };

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "admin-key": { type: "string" },
      "api-key": { type: "string" },
      org: { type: "string" },
      catalog: { type: "string" },
      parts: { type: "string" },
      scopes: { type: "string" },
      name: { type: "string" },
      expires: { type: "string" },
      "rate-limit": { type: "string" },
      key: { type: "string" },
      file: { type: "string" },
      batch: { type: "string" },
      wait: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [group, command] = positionals;
  if (!group || !(group in GROUP_HELP)) {
    console.log(HELP);
    return values.help ? 0 : 2;
  }
  if (values.help) {
    console.log(GROUP_HELP[group]);
    return 0;
  }
  const context = cliContext(values);
  try {
    switch (group) {
      case "keys":
        await keysCommand(command, values, context);
        return 0;
      case "catalogs":
        await catalogsCommand(command, values, context);
        return 0;
      default:
        return await importCommand(values, context);
    }
  } catch (error) {
    if (error instanceof UsageError) error.message = `${error.message}\n\n${GROUP_HELP[group]}`;
    throw error;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(error.message);
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
