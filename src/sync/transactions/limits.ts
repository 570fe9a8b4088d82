/**
 * Bounds on the work and storage one request can cause. Each default is far above what the real
 * client sends, so only hostile or broken clients ever meet one; each is set in
 * {@link SyncOptions.limits}.
 */
export interface Limits {
  /** The largest request body, in bytes; a larger one gets 413. Default: 32 MiB. */
  bodyBytes: number;
  /**
   * The most mutations one push runs. The client re-sends every pending mutation in each push and
   * never splits one, so the rest are not refused: they stay pending and come again in the next
   * push, after the ones run now. Default: 10,000.
   */
  mutationsPerPush: number;
  /**
   * The longest ID, in UTF-8 bytes: `clientGroupID`, `clientID`, `profileID`, `schemaVersion`,
   * a mutator's name, and the space from `space()`. A longer one gets 400. Default: 512.
   */
  idBytes: number;
  /** The longest key a mutator may read or write, in UTF-8 bytes. Default: 1,024. */
  keyBytes: number;
  /**
   * The largest value a mutator may write, as UTF-8 JSON text. The client recommends values
   * under 1 MB; every value must also fit in a pull response. Default: 1 MiB.
   */
  valueBytes: number;
  /**
   * How long the app's code may run at a time, in milliseconds: a mutator in a push, a view in a
   * pull, and the function given to `transact`, `mutate` or `read` (each of which may set its
   * own `timeoutMs`). Past it, a push stops as if its mutator had thrown a `TemporaryError` (503
   * with `Retry-After`) and its writes are discarded; a pull answers 503; a backend call rejects
   * with a `MutatorTimeoutError`, writing nothing. The store is then free for others. Code stuck
   * in a synchronous loop cannot be stopped: it must not wait on the outside world. Default:
   * 10,000. (Named `mutatorMs` before 0.2.)
   */
  appCodeMs: number;
  /**
   * The most key prefixes a view may return for one user (see `SyncOptions.view`); more is an
   * error in the app (500), never a quietly narrowed view. Default: 10,000.
   */
  viewPrefixes: number;
}

/** The defaults of {@link Limits}. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  bodyBytes: 32 * 1024 * 1024,
  mutationsPerPush: 10_000,
  idBytes: 512,
  keyBytes: 1024,
  valueBytes: 1024 * 1024,
  appCodeMs: 10_000,
  viewPrefixes: 10_000,
});

/**
 * How deeply a stored value may nest (an array or object counts one level). Not configurable:
 * every value stored must be servable, and `JSON.stringify` fails a few thousand levels down, at
 * a depth that differs between runtimes and between a cold and a warm JIT.
 */
export const MAX_VALUE_DEPTH = 100;
