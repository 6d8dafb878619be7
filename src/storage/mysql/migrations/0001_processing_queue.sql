CREATE TABLE `product_embeddings` (
	`catalog_id` char(36) NOT NULL,
	`product_id` varchar(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	`model_version` varchar(200) NOT NULL,
	`image_sha256` char(64) NOT NULL,
	`image` mediumblob NOT NULL,
	`colour` mediumblob NOT NULL,
	`text` mediumblob NOT NULL,
	`updated_at` datetime(3) NOT NULL,
	CONSTRAINT `product_embeddings_catalog_id_product_id_pk` PRIMARY KEY(`catalog_id`,`product_id`)
);
--> statement-breakpoint
ALTER TABLE `products` RENAME COLUMN `object_url` TO `object_key`;--> statement-breakpoint
ALTER TABLE `products` MODIFY COLUMN `object_key` varchar(512);--> statement-breakpoint
ALTER TABLE `products` ADD `generation` int unsigned DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `products` ADD `attempts` int unsigned DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `products` ADD `lease_owner` varchar(100);--> statement-breakpoint
ALTER TABLE `products` ADD `lease_expires_at` datetime(3);--> statement-breakpoint
ALTER TABLE `products` ADD `next_attempt_at` datetime(3);--> statement-breakpoint
ALTER TABLE `products` ADD `error_reason` varchar(1000);--> statement-breakpoint
ALTER TABLE `products` ADD `fetched_image_url` varchar(2048);--> statement-breakpoint
ALTER TABLE `products` ADD `image_sha256` char(64);--> statement-breakpoint
CREATE INDEX `products_queue` ON `products` (`status`,`next_attempt_at`);