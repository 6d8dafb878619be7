export { LocalObjectStore, isObjectKey } from "./local-object-store.js";
