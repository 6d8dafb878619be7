import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Product, Products } from "../catalogs/index.js";
import type { ObjectStore } from "../processing/index.js";
import { Rank } from "../gen/vitrine/v1/common_pb.js";
import { Product_Status, ProductService } from "../gen/vitrine/v1/product_service_pb.js";
import { enumName, productMessage } from "./messages.js";

export function productRpc(products: Products, objects: ObjectStore): ServiceImpl<typeof ProductService> {
  const toMessage = (product: Product) => productMessage(product, (key) => objects.urlOf(key));
  return {
    async createProducts(req) {
      const count = await products.create(req.organizationId, req.catalogId, req.products);
      return { status: "success", message: `${count} products accepted for processing`, count };
    },
    async listProducts(req) {
      const page = await products.list(req.organizationId, req.catalogId, {
        page: req.page,
        pageSize: req.pageSize,
        search: req.search,
        rank: enumName(Rank, req.rank),
        status: enumName(Product_Status, req.status),
        createdAfter: req.createdAfter && timestampDate(req.createdAfter),
        createdBefore: req.createdBefore && timestampDate(req.createdBefore),
      });
      return {
        data: page.items.map(toMessage),
        pagination: {
          totalItems: page.totalItems,
          totalPages: page.totalPages,
          currentPage: page.page,
          pageSize: page.pageSize,
          hasNext: page.page < page.totalPages,
          hasPrevious: page.page > 1,
        },
      };
    },
    async getProduct(req) {
      return { product: toMessage(await products.get(req.organizationId, req.catalogId, req.productId)) };
    },
    async deleteProducts(req) {
      const count = await products.deleteMany(req.organizationId, req.catalogId, req.productIds);
      return { status: "success", message: `${count} products deleted`, count };
    },
    async deleteProduct(req) {
      await products.deleteOne(req.organizationId, req.catalogId, req.productId);
      return { status: "success", message: `product ${req.productId} deleted` };
    },
    async updateProductRank(req) {
      const rank = await products.setRank(req.organizationId, req.catalogId, req.productId, enumName(Rank, req.rank));
      return { status: "success", message: `rank of product ${req.productId} set to ${rank}` };
    },
  };
}
