// Emscripten's Node glue inside @tensorflow/tfjs-backend-wasm registers process-wide
// 'uncaughtException' and 'unhandledRejection' listeners that rethrow. A server that handles those
// events itself (log and carry on, or shut down cleanly) would still crash, with Emscripten's frame
// on the stack. Whatever the wrapped code adds is removed again; listeners that were there before
// (the application's own, vitest's) are kept.

export async function withoutNewProcessHandlers<T>(fn: () => Promise<T>): Promise<T> {
  const exceptions = new Set(process.listeners("uncaughtException"));
  const rejections = new Set(process.listeners("unhandledRejection"));
  try {
    return await fn();
  } finally {
    for (const l of process.listeners("uncaughtException")) if (!exceptions.has(l)) process.removeListener("uncaughtException", l);
    for (const l of process.listeners("unhandledRejection")) if (!rejections.has(l)) process.removeListener("unhandledRejection", l);
  }
}
