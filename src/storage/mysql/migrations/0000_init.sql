CREATE TABLE `api_keys` (
	`id` char(12) NOT NULL,
	`organization_id` char(36) NOT NULL,
	`name` varchar(200) NOT NULL,
	`scopes` json NOT NULL,
	`secret_hash` char(64) NOT NULL,
	`created_at` datetime(3) NOT NULL,
	`expires_at` datetime(3),
	`revoked_at` datetime(3),
	CONSTRAINT `api_keys_id` PRIMARY KEY(`id`)
);
--> statement-breakpoint
CREATE TABLE `catalogs` (
	`id` char(36) NOT NULL,
	`organization_id` char(36) NOT NULL,
	`name` varchar(200) NOT NULL,
	`description` text NOT NULL,
	`created_at` datetime(3) NOT NULL,
	`updated_at` datetime(3) NOT NULL,
	`deleted_at` datetime(3),
	`deletion_marker` char(36) NOT NULL DEFAULT '',
	CONSTRAINT `catalogs_id` PRIMARY KEY(`id`),
	CONSTRAINT `catalogs_org_name_active` UNIQUE(`organization_id`,`name`,`deletion_marker`)
);
--> statement-breakpoint
CREATE TABLE `products` (
	`catalog_id` char(36) NOT NULL,
	`id` varchar(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	`image_url` varchar(2048) NOT NULL,
	`object_url` varchar(2048),
	`descriptor` text NOT NULL,
	`metadata` json NOT NULL,
	`status` enum('PROCESSING','PROCESSED','ERROR') NOT NULL,
	`rank` enum('NO_BOOST','BOOST','SUPER_BOOST') NOT NULL DEFAULT 'NO_BOOST',
	`created_at` datetime(3) NOT NULL,
	`updated_at` datetime(3) NOT NULL,
	CONSTRAINT `products_catalog_id_id_pk` PRIMARY KEY(`catalog_id`,`id`)
);
--> statement-breakpoint
CREATE INDEX `api_keys_organization` ON `api_keys` (`organization_id`);--> statement-breakpoint
CREATE INDEX `products_catalog_created` ON `products` (`catalog_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `products_catalog_status` ON `products` (`catalog_id`,`status`);