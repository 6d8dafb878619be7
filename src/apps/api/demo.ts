// `npm start -- --demo`: a demo organization, key and catalog made of real photos (scikit-image's
// sample photos, BSD-licensed, fetched from Debian's python3-skimage package), processed by the
// service's own workers from its own address.
import type { FastifyInstance } from "fastify";
import { errorObject } from "../../../gateway/index.js";
import type { SamplePhotoName } from "../../provisioning/index.js";
import type { RpcCore } from "../../rpc/index.js";

/** Always the same, so a second `--demo` start reuses the demo catalog instead of adding one. */
export const DEMO_ORGANIZATION_ID = "00000000-0000-4000-8000-00000000de70";
const DEMO_CATALOG = "Demo: sample photos";

const PRODUCTS: Record<SamplePhotoName, { descriptor: string; metadata: Record<string, string | number> }> = {
  astronaut: { descriptor: "Astronaut portrait in a white space suit with a flag", metadata: { kind: "portrait", colour: "white", price: 120 } },
  chelsea: { descriptor: "Tabby cat, orange and brown fur", metadata: { kind: "animal", colour: "orange", price: 40 } },
  coffee: { descriptor: "Cup of coffee on a saucer", metadata: { kind: "drink", colour: "brown", price: 4 } },
  motorcycle_left: { descriptor: "Red motorcycle, left side view", metadata: { kind: "vehicle", colour: "red", price: 9000 } },
  motorcycle_right: { descriptor: "Red motorcycle, right side view", metadata: { kind: "vehicle", colour: "red", price: 9000 } },
  rocket: { descriptor: "Rocket on the launch pad against a blue sky", metadata: { kind: "vehicle", colour: "white", price: 1000000 } },
};

/** Serves the demo photos, so the workers fetch them like any product image. */
export function registerDemoPhotos(rest: FastifyInstance, photos: Record<SamplePhotoName, Buffer>): void {
  rest.get<{ Params: { name: string } }>("/demo/photos/:name", async (request, reply) => {
    const photo = photos[request.params.name as SamplePhotoName];
    if (!photo) return reply.code(404).send(errorObject(request, 404, "no such demo photo"));
    return reply.header("content-type", "image/png").send(photo);
  });
}

/** Creates (or finds) the demo catalog, (re)submits its products and returns a fresh key for it. */
export async function seedDemo(core: RpcCore, baseUrl: string): Promise<{ organizationId: string; catalogId: string; key: string }> {
  const org = DEMO_ORGANIZATION_ID;
  const existing = (await core.catalogs.list(org)).find((c) => c.name === DEMO_CATALOG);
  const catalog = existing ?? (await core.catalogs.create(org, { name: DEMO_CATALOG, description: "scikit-image sample photos" }));
  await core.products.create(
    org,
    catalog.id,
    Object.entries(PRODUCTS).map(([name, p]) => ({ id: name.replace("_", "-"), catalogId: catalog.id, imageUrl: `${baseUrl}/demo/photos/${name}`, ...p })),
  );
  const { key } = await core.apiKeys.create(org, { name: "demo", scopes: ["read", "write", "search"], expiresAt: undefined });
  return { organizationId: org, catalogId: catalog.id, key };
}
