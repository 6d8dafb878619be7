// Loads the image and text encoders side by side (the image model on the event loop's spare time
// while the word vectors are read or, the first time, converted).
import { openImageEncoder, type ImageModel, type ImageRuntime, type OpenedImageEncoder } from "./image-encoder.js";
import { openSentenceEncoder, type OpenedSentenceEncoder } from "./text-encoder.js";
import type { Encoders } from "./types.js";

export interface LoadEncodersOptions {
  /** Where derived files live (the compact word vectors, InceptionV3's graph); shared by checkouts and processes. */
  cacheDir: string;
  log?: (msg: string) => void;
  /** Problems that do not stop the load (the image model falling back to tfjs); default: log. */
  warn?: (msg: string) => void;
  /** Which networks embed photos; default: "mobilenet" (image-encoder.ts). */
  imageModel?: ImageModel;
  /** Which library runs the image model; default: ONNX Runtime if it loads, else tfjs (image-encoder.ts). */
  imageRuntime?: ImageRuntime;
}

export async function loadEncoders(options: LoadEncodersOptions): Promise<Encoders> {
  const log = options.log ?? (() => undefined);
  const started = performance.now();
  const timed = async <T>(what: string, load: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const value = await load();
    log(`${what} loaded in ${Math.round(performance.now() - t0)} ms`);
    return value;
  };
  const [image, text] = await Promise.allSettled([
    timed("image encoder", () => openImageEncoder({ model: options.imageModel, cacheDir: options.cacheDir, log, warn: options.warn, runtime: options.imageRuntime })),
    timed("text encoder", () => openSentenceEncoder({ cacheDir: options.cacheDir, log })),
  ]);
  if (image.status === "rejected" || text.status === "rejected") {
    await closeLoaded(image, text);
    throw image.status === "rejected" ? image.reason : (text as PromiseRejectedResult).reason;
  }
  const version = `${image.value.version}+${text.value.version}`;
  log(
    `encoders ${version} ready in ${Math.round(performance.now() - started)} ms ` +
      `(${image.value.backend.name}${image.value.backend.simd ? " simd" : ""} backend, rss ${Math.round(process.memoryUsage.rss() / 2 ** 20)} MB)`,
  );
  let closing: Promise<void> | undefined;
  return {
    image: image.value,
    text: text.value,
    version,
    close: () => (closing ??= Promise.all([image.value.close(), text.value.close()]).then(() => undefined)),
  };
}

async function closeLoaded(
  image: PromiseSettledResult<OpenedImageEncoder>,
  text: PromiseSettledResult<OpenedSentenceEncoder>,
): Promise<void> {
  if (image.status === "fulfilled") await image.value.close();
  if (text.status === "fulfilled") await text.value.close();
}
