export {
  AppError,
  invalidArgument,
  notFound,
  alreadyExists,
  unauthenticated,
  permissionDenied,
} from "./app-error.js";
export type { ErrorKind } from "./app-error.js";
