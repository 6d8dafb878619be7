import { and, asc, eq, isNull } from "drizzle-orm";
import type { ApiKeyRecord, ApiKeyRepository } from "../../auth/index.js";
import type { Database } from "./connection.js";
import { apiKeys } from "./schema.js";

export class MysqlApiKeyRepository implements ApiKeyRepository {
  constructor(private readonly db: Database) {}

  async insert(record: ApiKeyRecord): Promise<void> {
    await this.db.insert(apiKeys).values(record);
  }

  async findById(id: string): Promise<ApiKeyRecord | undefined> {
    return (await this.db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0];
  }

  listByOrganization(organizationId: string): Promise<ApiKeyRecord[]> {
    return this.db
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.organizationId, organizationId))
      .orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
  }

  async revoke(organizationId: string, id: string, now: Date): Promise<ApiKeyRecord | undefined> {
    const scope = and(eq(apiKeys.id, id), eq(apiKeys.organizationId, organizationId));
    await this.db.update(apiKeys).set({ revokedAt: now }).where(and(scope, isNull(apiKeys.revokedAt)));
    return (await this.db.select().from(apiKeys).where(scope))[0];
  }
}
