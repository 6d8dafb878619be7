import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer } from "../support/test-server.js";
import type { TestServer } from "../support/test-server.js";

const run = promisify(execFile);
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** Runs the real CLI in a child process against the running server. */
function cli(...args: string[]) {
  return run("node_modules/.bin/tsx", ["src/apps/cli/main.ts", ...args, "--url", server.restUrl], {
    env: { ...process.env, ADMIN_API_KEY: server.adminKey },
  });
}

describe("vitrine keys", () => {
  it("creates, lists and revokes an organization key", async () => {
    const org = randomUUID();
    const created = JSON.parse((await cli("keys", "create", "--org", org, "--scopes", "read,search", "--name", "shop")).stdout);
    expect(created.key).toMatch(/^vtr_/);
    expect(created.apiKey).toMatchObject({ organizationId: org, name: "shop", scopes: ["read", "search"] });
    expect(created.apiKey.rateLimitPerSecond).toBeUndefined();
    const limited = JSON.parse((await cli("keys", "create", "--org", randomUUID(), "--scopes", "read", "--rate-limit", "25")).stdout);
    expect(limited.apiKey.rateLimitPerSecond).toBe(25);

    const response = await fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: created.key } });
    expect(response.status).toBe(200);

    const listed = JSON.parse((await cli("keys", "list", "--org", org)).stdout);
    expect(listed.keys.map((k: { id: string }) => k.id)).toEqual([created.apiKey.id]);

    const revoked = JSON.parse((await cli("keys", "revoke", "--org", org, "--key", created.apiKey.id)).stdout);
    expect(revoked.status).toBe("success");
    const after = await fetch(`${server.restUrl}/organizations/${org}/catalogs`, { headers: { SERVICE_API_KEY: created.key } });
    expect(after.status).toBe(401);
  });

  it("explains usage errors and server refusals, with a non-zero exit", async () => {
    await expect(cli("keys", "create", "--scopes", "read")).rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/--org is required/) });
    await expect(cli("keys", "create", "--org", randomUUID(), "--scopes", "root")).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/unknown scope "root"/),
    });
    expect((await cli("--help")).stdout).toMatch(/keys create\|list\|revoke/);
    expect((await cli("keys", "--help")).stdout).toMatch(/vitrine keys create --org <uuid> --scopes/);
  });
});
