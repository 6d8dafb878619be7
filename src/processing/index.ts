export { ProcessingWorker } from "./worker.js";
export type { BatchReport, WorkerOptions } from "./worker.js";
export { processProduct } from "./product-processor.js";
export type { Outcome, PhaseTimings, ProcessorDeps } from "./product-processor.js";
export type { ClaimedProduct, Embeddings, ProcessedResult, ProcessingQueue } from "./processing-queue.js";
export type { ObjectStore } from "./object-store.js";
export type { ProductEncoders } from "./product-encoders.js";
export { normaliseImage } from "./image-normaliser.js";
