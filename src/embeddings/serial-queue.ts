// Runs tasks one at a time in call order. The model's weights and scratch memory are shared, and
// the wasm backend has a single thread anyway: interleaving would only raise peak memory.

export type SerialQueue = <T>(task: () => T | Promise<T>) => Promise<T>;

export function createSerialQueue(): SerialQueue {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => T | Promise<T>): Promise<T> => {
    const run = tail.then(task);
    // A failed task must not poison the ones queued behind it.
    tail = run.catch(() => undefined);
    return run;
  };
}
