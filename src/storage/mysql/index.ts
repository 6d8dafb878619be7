export { openMysql } from "./connection.js";
export type { Database, MysqlConnection } from "./connection.js";
export { MysqlCatalogRepository } from "./catalog-repository.js";
export { MysqlProductRepository } from "./product-repository.js";
export { MysqlApiKeyRepository } from "./api-key-repository.js";
export { MysqlProcessingQueue } from "./processing-queue.js";
export { MysqlTextImageMapStore } from "./text-image-map-store.js";
