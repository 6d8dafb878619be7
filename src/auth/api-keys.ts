import { invalidArgument, notFound, unauthenticated } from "../errors/index.js";
import { parseUuid } from "../catalogs/index.js";
import type { ApiKeyRecord, ApiKeyRepository } from "./api-key-repository.js";
import { generateKey, hashSecret, parseKey, secretsMatch } from "./key-secret.js";
import type { Principal } from "./principal.js";
import { SCOPES, isScope } from "./scopes.js";
import type { Scope } from "./scopes.js";

export type ApiKeyView = Omit<ApiKeyRecord, "secretHash">;

/** Key records kept in memory at most, so a flood of distinct keys cannot grow it without bound. */
const CACHE_ENTRIES = 10_000;

const MAX_RATE_LIMIT = 1_000_000;
/**
 * The latest expiry a key can have: the end of google.protobuf.Timestamp's range (and of the
 * DATETIME column keys are stored in). gRPC callers can send seconds far beyond it.
 */
export const LATEST_EXPIRY = new Date("9999-12-31T23:59:59.999Z");

export class ApiKeys {
  private readonly adminKeyHash: string;
  /** Recently read key records: every call is authenticated, and a database round trip each is most of a search's time. */
  private readonly cache = new Map<string, { record: ApiKeyRecord; until: number }>();

  constructor(
    private readonly keys: ApiKeyRepository,
    adminKey: string,
    /** How long a key record read from storage is trusted; a revocation by another process takes effect within it. */
    private readonly cacheMs = 0,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.adminKeyHash = hashSecret(adminKey);
  }

  /** Resolves the presented key to a principal, or throws unauthenticated. */
  async authenticate(presented: string | null | undefined): Promise<Principal> {
    if (!presented) throw unauthenticated("missing API key: send it in the SERVICE_API_KEY header");
    if (secretsMatch(presented, this.adminKeyHash)) return { kind: "admin" };
    const parsed = parseKey(presented);
    const record = parsed && (await this.record(parsed.id));
    if (!parsed || !record || !secretsMatch(parsed.secret, record.secretHash) || record.revokedAt) {
      throw unauthenticated("invalid API key");
    }
    if (record.expiresAt && record.expiresAt <= this.now()) throw unauthenticated("this API key has expired");
    return {
      kind: "organization",
      keyId: record.id,
      organizationId: record.organizationId,
      scopes: record.scopes,
      rateLimitPerSecond: record.rateLimitPerSecond,
    };
  }

  async create(
    organizationId: string,
    input: { name: string; scopes: string[]; expiresAt: Date | undefined; rateLimitPerSecond?: number | undefined },
  ): Promise<{ apiKey: ApiKeyView; key: string }> {
    const orgId = parseUuid(organizationId, "organizationId");
    const name = input.name.trim();
    if (name.length > 200) throw invalidArgument("name must be at most 200 characters");
    if (input.scopes.length === 0) throw invalidArgument(`scopes is required: any of ${SCOPES.join(", ")}`);
    const unknown = input.scopes.find((s) => !isScope(s));
    if (unknown !== undefined) {
      throw invalidArgument(`unknown scope ${JSON.stringify(unknown)}: use any of ${SCOPES.join(", ")}`);
    }
    const now = this.now();
    if (input.expiresAt && Number.isNaN(input.expiresAt.getTime())) throw invalidArgument("expiresAt is not a valid time");
    if (input.expiresAt && input.expiresAt <= now) throw invalidArgument("expiresAt must be in the future");
    const limit = input.rateLimitPerSecond;
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0 && limit <= MAX_RATE_LIMIT)) {
      throw invalidArgument(`rateLimitPerSecond must be an integer from 0 (no limit) to ${MAX_RATE_LIMIT}, got ${limit}`);
    }
    if (input.expiresAt && input.expiresAt > LATEST_EXPIRY) {
      throw invalidArgument(`expiresAt must be at most ${LATEST_EXPIRY.toISOString()}; leave it out for a key that does not expire`);
    }
    const { id, secret, key } = generateKey();
    const record: ApiKeyRecord = {
      id,
      organizationId: orgId,
      name,
      scopes: [...new Set(input.scopes as Scope[])],
      secretHash: hashSecret(secret),
      createdAt: now,
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
      rateLimitPerSecond: limit ?? null,
    };
    await this.keys.insert(record);
    return { apiKey: view(record), key };
  }

  async list(organizationId: string): Promise<ApiKeyView[]> {
    return (await this.keys.listByOrganization(parseUuid(organizationId, "organizationId"))).map(view);
  }

  async revoke(organizationId: string, keyId: string): Promise<ApiKeyView> {
    const orgId = parseUuid(organizationId, "organizationId");
    const record = await this.keys.revoke(orgId, keyId, this.now());
    this.cache.delete(keyId);
    if (!record) throw notFound(`API key ${keyId} not found in this organization`);
    return view(record);
  }

  private async record(id: string): Promise<ApiKeyRecord | undefined> {
    const now = Date.now();
    const cached = this.cache.get(id);
    if (cached && cached.until > now) return cached.record;
    const record = await this.keys.findById(id);
    // Unknown ids are not remembered: only real keys take room.
    if (record && this.cacheMs > 0) {
      this.cache.delete(id);
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(id, { record, until: now + this.cacheMs });
    }
    return record;
  }
}

function view({ secretHash: _, ...rest }: ApiKeyRecord): ApiKeyView {
  return rest;
}
