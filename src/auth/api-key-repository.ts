import type { Scope } from "./scopes.js";

export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  name: string;
  scopes: Scope[];
  secretHash: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** Sustained calls per second allowed to this key (0: unlimited); null: the service's default. */
  rateLimitPerSecond: number | null;
}

export interface ApiKeyRepository {
  insert(record: ApiKeyRecord): Promise<void>;
  findById(id: string): Promise<ApiKeyRecord | undefined>;
  listByOrganization(organizationId: string): Promise<ApiKeyRecord[]>;
  /** Returns the revoked record, or undefined when the organization has no such key. */
  revoke(organizationId: string, id: string, now: Date): Promise<ApiKeyRecord | undefined>;
}
