/**
 * Token buckets by key, in this process's memory, at most `kept` of them: a key takes a token per
 * request, and tokens come back at `perSecond` up to `capacity`. The least recently used bucket
 * goes first when there are too many, so keys a client invents by the million cost a bounded map.
 * Forgetting a bucket can only be lenient: its key starts again with a full one, as it would
 * after a quiet spell.
 */
export class TokenBuckets {
  readonly #perSecond: number;
  readonly #capacity: number;
  readonly #kept: number;
  /** In least recently used order (a Map keeps insertion order; a use moves a key to the end). */
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perSecond: number, capacity: number, kept: number) {
    this.#perSecond = perSecond;
    this.#capacity = capacity;
    this.#kept = kept;
  }

  /** How many buckets are kept now. */
  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Takes a token of `key`'s bucket at `now` (milliseconds): 0 when there was one, else the
   * milliseconds until there will be (nothing is taken then, so a refused client is not set back).
   */
  take(key: string, now: number): number {
    const buckets = this.#buckets;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.#capacity, at: now };
      if (buckets.size >= this.#kept) buckets.delete(buckets.keys().next().value!);
    } else {
      buckets.delete(key);
      // A clock that goes back (a test's, a corrected wall clock) refills nothing.
      bucket.tokens = Math.min(this.#capacity, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * this.#perSecond);
      bucket.at = Math.max(bucket.at, now);
    }
    buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return ((1 - bucket.tokens) / this.#perSecond) * 1000;
  }
}
