CREATE TABLE `index_queue` (
	`catalog_id` char(36) NOT NULL,
	`product_id` varchar(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	`version` int unsigned NOT NULL DEFAULT 0,
	CONSTRAINT `index_queue_catalog_id_product_id_pk` PRIMARY KEY(`catalog_id`,`product_id`)
);
--> statement-breakpoint
CREATE TABLE `search_log` (
	`id` bigint unsigned AUTO_INCREMENT NOT NULL,
	`organization_id` char(36) NOT NULL,
	`catalog_id` char(36) NOT NULL,
	`kind` enum('search','recommendations') NOT NULL,
	`query` varchar(1000),
	`product_id` varchar(128) CHARACTER SET ascii COLLATE ascii_bin,
	`top_k` int unsigned NOT NULL,
	`visual_weight` double NOT NULL,
	`filters` json NOT NULL,
	`result_count` int unsigned NOT NULL,
	`took_ms` double NOT NULL,
	`session_id` varchar(200),
	`ip_address` varchar(64),
	`user_agent` varchar(1000),
	`created_at` datetime(3) NOT NULL,
	CONSTRAINT `search_log_id` PRIMARY KEY(`id`)
);
--> statement-breakpoint
CREATE INDEX `search_log_catalog_created` ON `search_log` (`catalog_id`,`created_at`);