CREATE TABLE `catalog_text_map_chunks` (
	`catalog_id` char(36) NOT NULL,
	`generation` int unsigned NOT NULL,
	`seq` int unsigned NOT NULL,
	`bytes` mediumblob NOT NULL,
	CONSTRAINT `catalog_text_map_chunks_catalog_id_generation_seq_pk` PRIMARY KEY(`catalog_id`,`generation`,`seq`)
);
--> statement-breakpoint
CREATE TABLE `catalog_text_map_failures` (
	`catalog_id` char(36) NOT NULL,
	`failures` int unsigned NOT NULL,
	`reason` varchar(300) NOT NULL,
	`failed_at` datetime(3) NOT NULL,
	`retry_at` datetime(3) NOT NULL,
	CONSTRAINT `catalog_text_map_failures_catalog_id` PRIMARY KEY(`catalog_id`)
);
--> statement-breakpoint
ALTER TABLE `catalog_text_maps` MODIFY COLUMN `map` mediumblob;--> statement-breakpoint
ALTER TABLE `catalog_text_maps` ADD `described_at_fit` int unsigned DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `catalog_text_maps` ADD `generation` int unsigned;--> statement-breakpoint
ALTER TABLE `catalog_text_maps` ADD `bytes` int unsigned DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `product_embeddings` ADD `described` boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX `product_embeddings_described` ON `product_embeddings` (`catalog_id`,`model_version`,`described`);--> statement-breakpoint
UPDATE `product_embeddings` SET `described` = (`text` <> REPEAT(X'00', LENGTH(`text`)));--> statement-breakpoint
UPDATE `catalog_text_maps` SET `described_at_fit` = `trained_on`, `bytes` = LENGTH(`map`);
