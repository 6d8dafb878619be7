// The elements a set's sample of attributes is read from (filter-shares.ts), each as likely as any
// other. VRANDMEMBER alone is not, asked for a large share of a set: Redis 8.0 answered 1,000 of
// 1,200-3,000 elements with a run of them in the order they were added, so a catalog imported
// category by category had its sample from one or two categories, and filters on the others
// looked rare. From 5,000 elements on it picks them apart (the newest tenth about two thirds as
// likely as the rest: left as it is).
import type { RedisClient } from "./connection.js";

/** Sets of up to this many times the sample's size give every id, and the sample is drawn here. */
const WHOLE_SET_UP_TO = 8;

/** Up to `size` distinct elements of the vector set at `key`, drawn uniformly. */
export async function sampledIds(redis: RedisClient, key: string, size: number): Promise<string[]> {
  const elements = Number(await redis.call("VCARD", key));
  if (elements > WHOLE_SET_UP_TO * size) return (await redis.call("VRANDMEMBER", key, String(size))) as string[];
  const ids = elements === 0 ? [] : ((await redis.call("VRANDMEMBER", key, String(elements))) as string[]);
  // The first `size` places of a Fisher-Yates shuffle.
  for (let k = 0; k < Math.min(size, ids.length - 1); k++) {
    const pick = k + Math.floor(Math.random() * (ids.length - k));
    [ids[k], ids[pick]] = [ids[pick]!, ids[k]!];
  }
  return ids.slice(0, size);
}
