// What the storage layer offers beside its per-engine folders: reading driver errors, and the
// vector byte layout both engines store.
export { storeOf, unavailableStore } from "./store-errors.js";
export { bytesToVector, vectorToBytes } from "./fp32.js";
