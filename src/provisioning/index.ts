export { provisionRedis8 } from "./redis8.js";
export type { ProvisionedRedis, ProvisionRedis8Options } from "./redis8.js";
export { samplePhotos, SAMPLE_PHOTO_FILES } from "./sample-photos.js";
export type { SamplePhotoName } from "./sample-photos.js";
export { probeMysql, provisionMariadb } from "./mariadb.js";
export type { MysqlProbe, ProvisionedMariadb, ProvisionMariadbOptions } from "./mariadb.js";
export { provisionRedis8Cluster } from "./redis8-cluster.js";
export type { ProvisionedRedisCluster, ProvisionRedisClusterOptions } from "./redis8-cluster.js";
