export { describeRedisTarget, forEachPrimary, openRedis } from "./connection.js";
export type { RedisClient, RedisTarget } from "./connection.js";
export { RedisVectorIndex } from "./vector-index.js";
export type { RedisVectorIndexOptions } from "./vector-index.js";
export type { LearningOutcome } from "./filter-learning.js";
export { RedisRateLimitBuckets } from "./rate-limit-buckets.js";
