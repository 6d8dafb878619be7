import type { Logger } from "../../logging/index.js";
import { openMysql } from "../../storage/mysql/index.js";
import type { MysqlConnection } from "../../storage/mysql/index.js";
import { describeRedisTarget, openRedis } from "../../storage/redis/index.js";
import type { RedisClient, RedisTarget } from "../../storage/redis/index.js";
import { maskPassword, openWhenReachable } from "./startup-wait.js";

// Refusals that retrying cannot cure: wrong credentials, no such database rights.
const MYSQL_PERMANENT = new Set(["ER_ACCESS_DENIED_ERROR", "ER_DBACCESS_DENIED_ERROR", "ER_NOT_SUPPORTED_AUTH_MODE", "ER_ACCESS_DENIED_NO_PASSWORD_ERROR"]);
const REDIS_PERMANENT = /vector sets|WRONGPASS|NOAUTH|NOPERM/;

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current && typeof current === "object" && chain.length < 5; current = (current as { cause?: unknown }).cause) {
    chain.push(current);
  }
  return chain;
}

/** MySQL at start-up, waiting up to `waitMs` for it to answer (STARTUP_WAIT_MS). */
export function openMysqlAtStart(url: string, waitMs: number, log: Logger): Promise<MysqlConnection> {
  return openWhenReachable(
    {
      store: "MySQL",
      variable: "MYSQL_URL",
      address: maskPassword(url),
      open: () => openMysql(url),
      permanent: (error) =>
        causes(error).some((e) => MYSQL_PERMANENT.has(String((e as { code?: unknown }).code)) || /^MYSQL_URL /.test(String((e as Error).message))),
    },
    waitMs,
    log,
  );
}

/** Redis (one server or a cluster) at start-up, waiting up to `waitMs` for it to answer (STARTUP_WAIT_MS). */
export function openRedisAtStart(target: RedisTarget, waitMs: number, log: Logger): Promise<RedisClient> {
  const { variable, address } = describeRedisTarget(target);
  return openWhenReachable(
    {
      store: "Redis",
      variable,
      address: maskPassword(address),
      open: () => openRedis(target),
      permanent: (error) => causes(error).some((e) => REDIS_PERMANENT.test(String((e as Error).message))),
    },
    waitMs,
    log,
  );
}
