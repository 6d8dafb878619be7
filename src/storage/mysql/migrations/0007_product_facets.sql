CREATE TABLE `product_facets` (
	`catalog_id` char(36) NOT NULL,
	`facet` binary(16) NOT NULL,
	`product_id` varchar(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	CONSTRAINT `product_facets_catalog_id_product_id_facet_pk` PRIMARY KEY(`catalog_id`,`product_id`,`facet`)
);
--> statement-breakpoint
ALTER TABLE `catalogs` ADD `facets_complete` boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX `product_facets_facet` ON `product_facets` (`catalog_id`,`facet`);--> statement-breakpoint
UPDATE `catalogs` SET `facets_complete` = false WHERE EXISTS (SELECT 1 FROM `products` WHERE `products`.`catalog_id` = `catalogs`.`id`);
