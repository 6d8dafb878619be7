// The auth interceptor takes a key its door already checked only when it is the key this very call
// carries; any other call (in process, no door) is authenticated as before.
import { Code, ConnectError, createClient, createContextValues } from "@connectrpc/connect";
import type { ConnectRouter } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiKeys } from "../auth/index.js";
import type { Principal } from "../auth/index.js";
import { SearchService } from "../gen/vitrine/v1/search_service_pb.js";
import { createLogger } from "../logging/index.js";
import { API_KEY_HEADER } from "./headers.js";
import { createInProcessTransport } from "./in-process-transport.js";
import { authInterceptor, errorInterceptor } from "./interceptors.js";
import { requirementsOf } from "./method-options.js";
import { principalKey, withCheckedKey } from "./principal-context.js";
import { MysqlApiKeyRepository, openMysql } from "../storage/mysql/index.js";
import type { MysqlConnection } from "../storage/mysql/index.js";
import { dropScratchDatabase, scratchDatabaseUrl } from "../../test/support/scratch-mysql.js";

const ORG = "00000000-0000-4000-8000-00000000000a";
const OTHER_ORG = "00000000-0000-4000-8000-00000000000b";

// The keys live in the real MariaDB, in a database of this spec's own.
const databaseUrl = scratchDatabaseUrl();
let mysql: MysqlConnection;
beforeAll(async () => {
  mysql = await openMysql(databaseUrl);
});
afterAll(async () => {
  await mysql?.close();
  await dropScratchDatabase(databaseUrl);
});

// The handler answers with whom the interceptor let in.
function routes(router: ConnectRouter): void {
  router.service(SearchService, {
    searchProducts(_request, context) {
      const principal = context.values.get(principalKey);
      return { status: principal?.kind === "organization" ? principal.keyId : String(principal?.kind) };
    },
  });
}

let keys: ApiKeys;
let search: (key: string | null, checked?: { key: string; principal: Principal }, org?: string) => Promise<string>;
let authenticate: ReturnType<typeof vi.spyOn>;
let good: { key: string; id: string };
let revoked: { key: string; id: string };

beforeEach(async () => {
  keys = new ApiKeys(new MysqlApiKeyRepository(mysql.db), "admin-key-of-the-spec", 60_000);
  const made = await keys.create(ORG, { name: "good", scopes: ["search"], expiresAt: undefined });
  good = { key: made.key, id: made.apiKey.id };
  const old = await keys.create(ORG, { name: "revoked", scopes: ["search"], expiresAt: undefined });
  revoked = { key: old.key, id: old.apiKey.id };
  await keys.revoke(ORG, revoked.id);
  authenticate = vi.spyOn(keys, "authenticate");
  const log = createLogger({ level: "silent" });
  const transport = createInProcessTransport(routes, [errorInterceptor(log), authInterceptor(keys, requirementsOf([SearchService]))]);
  const client = createClient(SearchService, transport);
  search = async (key, checked, org = ORG) =>
    (
      await client.searchProducts(
        { organizationId: org, catalogId: ORG, query: "x" },
        {
          headers: key === null ? {} : { [API_KEY_HEADER]: key },
          ...(checked ? { contextValues: withCheckedKey(createContextValues(), checked) } : {}),
        },
      )
    ).status;
});

const codeOf = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => ConnectError.from(error).code);

describe("authInterceptor", () => {
  it("authenticates a call that no door checked first (in process)", async () => {
    expect(await search(good.key)).toBe(good.id);
    expect(authenticate).toHaveBeenCalledTimes(1);
    expect(await codeOf(search(revoked.key))).toBe(Code.Unauthenticated);
    expect(await codeOf(search(null))).toBe(Code.Unauthenticated);
    expect(await codeOf(search("vtr_nonsense"))).toBe(Code.Unauthenticated);
  });

  it("takes the principal of a key its door checked, without authenticating it again", async () => {
    const principal = await keys.authenticate(good.key);
    authenticate.mockClear();
    expect(await search(good.key, { key: good.key, principal })).toBe(good.id);
    expect(authenticate).not.toHaveBeenCalled();
    // Authorization is still the interceptor's: another organization's call is refused.
    expect(await codeOf(search(good.key, { key: good.key, principal }, OTHER_ORG))).toBe(Code.PermissionDenied);
  });

  it("authenticates the call's own key when the checked key is another one, or the call has none", async () => {
    const principal = await keys.authenticate(good.key);
    authenticate.mockClear();
    expect(await codeOf(search(revoked.key, { key: good.key, principal }))).toBe(Code.Unauthenticated);
    expect(await codeOf(search(null, { key: good.key, principal }))).toBe(Code.Unauthenticated);
    // Two key headers reach the interceptor joined: not the key that was checked.
    expect(await codeOf(search(`${good.key}, ${good.key}`, { key: good.key, principal }))).toBe(Code.Unauthenticated);
    expect(authenticate).toHaveBeenCalledTimes(3);
  });
});
