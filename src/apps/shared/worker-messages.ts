import type { BatchReport, MapFitReport } from "../../processing/index.js";

/**
 * Messages between the service and the worker processes it forked: "wake" (products were
 * queued), "ready" (models loaded), and each batch's and each map fit's report, for the
 * service's metrics.
 */
export type WorkerMessage = "wake" | "ready" | { kind: "batch"; report: BatchReport } | { kind: "map-fit"; report: MapFitReport };

/** Sends a report to the service that forked this process, if one did; a message lost to a closing channel is not worth an error. */
export function reportToService(message: WorkerMessage): void {
  if (process.send && process.connected) process.send(message, undefined, {}, () => undefined);
}
