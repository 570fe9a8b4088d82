import { compareUTF8 } from '../base/utf8.js';

/**
 * An ordered set of strings (UTF-8 byte order) kept as a list of small sorted chunks.
 *
 * A flat sorted array costs a full shift per insert, too slow at a million keys; a chunked one
 * shifts at most one chunk and finds it by binary search over the chunks' last keys. Appends,
 * the common case for version-index keys, touch only the last chunk.
 */
export class SortedKeys {
  #chunks: string[][] = [];

  /** Adds `key`; adding a present key does nothing. */
  add(key: string): void {
    const chunks = this.#chunks;
    if (chunks.length === 0) {
      chunks.push([key]);
      return;
    }
    const last = chunks[chunks.length - 1]!;
    // Version-index keys grow with the version, so most inserts land at the very end.
    if (compareUTF8(last[last.length - 1]!, key) < 0) {
      if (last.length < MAX_CHUNK) last.push(key);
      else chunks.push([key]);
      return;
    }
    const c = Math.min(this.#chunkFor(key), chunks.length - 1);
    const chunk = chunks[c]!;
    const i = lowerBound(chunk, key);
    if (chunk[i] === key) return;
    chunk.splice(i, 0, key);
    if (chunk.length > MAX_CHUNK) chunks.splice(c + 1, 0, chunk.splice(MAX_CHUNK / 2));
  }

  /** Removes `key` if present. */
  delete(key: string): void {
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c];
    if (chunk === undefined) return;
    const i = lowerBound(chunk, key);
    if (chunk[i] !== key) return;
    chunk.splice(i, 1);
    if (chunk.length === 0) this.#chunks.splice(c, 1);
  }

  /** Keys at or after `start` (after it when `exclusive`), in order. */
  *from(start: string, exclusive: boolean): Generator<string> {
    const chunks = this.#chunks;
    let c = this.#chunkFor(start);
    if (c >= chunks.length) return;
    let i = lowerBound(chunks[c]!, start);
    if (exclusive && chunks[c]![i] === start) i++;
    for (; c < chunks.length; c++, i = 0) {
      const chunk = chunks[c]!;
      // Copy-free iteration is safe: callers never modify the set while iterating it.
      for (; i < chunk.length; i++) yield chunk[i]!;
    }
  }

  /** Index of the first chunk whose last key is >= `key` (chunks.length when none is). */
  #chunkFor(key: string): number {
    const chunks = this.#chunks;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = chunks[mid]!;
      if (compareUTF8(chunk[chunk.length - 1]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const MAX_CHUNK = 512;

/** Index of the first element of sorted `keys` that is >= `key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareUTF8(keys[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
