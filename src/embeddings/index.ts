// Embeddings: image (MobileNetV2 features, optionally InceptionV3's beside them), text (GloVe sentence vectors) and colour profiles.
// Everything runs in-process and offline; the weights ship inside npm packages.
export type { Encoders, ImageEncoder, SentenceEncoder } from "./types.js";
export { loadEncoders } from "./load-encoders.js";
export type { LoadEncodersOptions } from "./load-encoders.js";
export { colourProfile, COLOUR_NAMES, COLOUR_PROFILE_VERSION } from "./colour-profile.js";
export type { ColourName } from "./colour-names.js";
export { IMAGE_ENCODER_VERSION, IMAGE_DIMENSIONS, IMAGE_MODELS, imageEncoderVersion } from "./image-encoder.js";
export type { ImageModel, ImageRuntime } from "./image-encoder.js";
export { TEXT_ENCODER_VERSION, TEXT_DIMENSIONS } from "./text-encoder.js";
export { ImageDecodeError } from "./decode-rgb.js";
export { fitTextImageMap, textImageMapFromBytes, TEXT_IMAGE_MAP_RECIPE } from "./text-image-map.js";
export type { FitTextImageMapOptions, TextImageMap, TextImageSample } from "./text-image-map.js";
export { openSentenceEncoder } from "./text-encoder.js";
export type { OpenedSentenceEncoder } from "./text-encoder.js";
export { dot, l2NormaliseInPlace } from "./vector-math.js";
