/**
 * A read that several pulls share (shared-reads.ts, prefetched-read.ts): what is derived from its
 * snapshot, a patch, is computed once for every pull that names it alike.
 */
export abstract class SharingRead {
  readonly #derived = new Map<string, Promise<unknown>>();

  /**
   * What `compute` makes of this snapshot, computed once for all the jobs that ask under `key`.
   * The key must name everything the result depends on beyond the snapshot: a patch for one
   * user's view is keyed by that view, so it never reaches another user.
   */
  once<T>(key: string, compute: () => Promise<T>): Promise<T> {
    let result = this.#derived.get(key);
    if (result === undefined) this.#derived.set(key, (result = compute()));
    return result as Promise<T>;
  }
}

/** `compute()`, shared under `key` when `tx` is shared by several pulls: see {@link SharingRead.once}. */
export function sharedOnce<T>(tx: object, key: string, compute: () => Promise<T>): Promise<T> {
  return tx instanceof SharingRead ? tx.once(key, compute) : compute();
}
