// The sample photos live with the provisioning code (the demo uses them too).
export { samplePhotos } from "../../src/provisioning/sample-photos.js";
export type { SamplePhotoName } from "../../src/provisioning/sample-photos.js";
