// Completes PROCESSING products through the real processing queue with embeddings the test
// chooses, in place of the image model only: from MySQL on (the stored embeddings, the index
// queue, the text-image map, the sync to Redis) everything is the service's own path.
import { createHash, randomBytes } from "node:crypto";
import { createAfterBatch } from "../../src/apps/shared/processing-wiring.js";
import { MysqlProcessingQueue } from "../../src/storage/mysql/index.js";
import type { TestServer } from "./test-server.js";

export { randomUnit, seededRandom } from "./random.js";

export const SYNTHETIC_MODEL = "synthetic-v1";

export interface SyntheticEmbeddings {
  image: Float32Array;
  colour: Float32Array;
  text: Float32Array;
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Processes every PROCESSING product of the server's database that has an entry in `embeddings`. */
export async function completeWith(server: TestServer, embeddings: ReadonlyMap<string, SyntheticEmbeddings>): Promise<void> {
  const { mysql, searchIndex } = server.app;
  const queue = new MysqlProcessingQueue(mysql.db);
  const owner = `test-${randomBytes(4).toString("hex")}`;
  const jobs = await queue.claim(owner, 10_000, 60_000, 100);
  const catalogs = new Set<string>();
  for (const job of jobs) {
    const e = embeddings.get(job.productId);
    if (!e) {
      await queue.retryLater(job, owner, "no synthetic embeddings", new Date());
      continue;
    }
    const sha = createHash("sha256").update(job.productId).digest("hex");
    await queue.complete(job, owner, {
      objectKey: `${job.catalogId}/${sha}.jpg`,
      fetchedImageUrl: job.imageUrl,
      imageSha256: sha,
      embeddings: { modelVersion: SYNTHETIC_MODEL, ...e },
    });
    catalogs.add(job.catalogId);
  }
  // What a worker does after each batch, through the service's own wiring.
  await createAfterBatch(server.config, mysql, searchIndex.sync, SYNTHETIC_MODEL, quiet)(catalogs);
}

/** An L1-normalised colour histogram dominated by one colour. */
export function colourHistogram(random: () => number, dominant: number, dims = 11): Float32Array {
  const v = new Float32Array(dims);
  for (let i = 0; i < dims; i++) v[i] = random() * 0.2;
  v[dominant] = 1 + v[dominant]!;
  const sum = v.reduce((a, b) => a + b, 0);
  for (let i = 0; i < dims; i++) v[i] = v[i]! / sum;
  return v;
}
