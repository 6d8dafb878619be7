CREATE TABLE `catalog_text_maps` (
	`catalog_id` char(36) NOT NULL,
	`model_version` varchar(200) NOT NULL,
	`trained_on` int unsigned NOT NULL,
	`map` mediumblob NOT NULL,
	`updated_at` datetime(3) NOT NULL,
	CONSTRAINT `catalog_text_maps_catalog_id` PRIMARY KEY(`catalog_id`)
);
