/**
 * The app every runtime test serves: the same mutators and limits in Node, Deno, Bun and
 * workerd. It imports nothing at run time, so each runtime's entry script can pair it with the
 * package as that runtime loads it.
 */
import type { ReadonlyJSONValue, WriteTransaction } from 'replicache';
import type { Storage, SyncOptions, View } from '../../src/index.js';

/** Small, so that the suite can send a body over it cheaply. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Typed against the client's transaction: the real client runs this same source (test/interop). */
export const runtimeMutators = {
  put: async (tx: WriteTransaction, { key, value }: { key: string; value: ReadonlyJSONValue }) => {
    await tx.set(key, value);
  },
  del: async (tx: WriteTransaction, { key }: { key: string }) => {
    await tx.del(key);
  },
  increment: async (tx: WriteTransaction, { key, delta }: { key: string; delta: number }) => {
    await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + delta);
  },
  /** Writes `key` after `ms`: a push that is still in flight when a test stops the server. */
  slowPut: async (tx: WriteTransaction, { key, ms }: { key: string; ms: number }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    await tx.set(key, ms);
  },
};

/**
 * A view every runtime can serve anonymously: a client group reads the prefixes listed at
 * `views/<clientGroupID>`, or the whole space when there is no such entry (every other test).
 */
export const runtimeView: View = async (tx, { clientGroupID }) => ((await tx.get(`views/${clientGroupID}`)) as string[] | undefined) ?? [''];

/** The inspector's secret in the runtime suite (32 characters or more, in no doc). */
export const RUNTIME_INSPECTOR_SECRET = 'runtime-inspector-secret-5e8d1c0b9a7f';

/** The app's options over `storage`: a server makes its context of them with the package as it loads it (a context is its own copy's: see context.ts here for Node). */
export function runtimeOptions(storage: Storage, options: Partial<SyncOptions> = {}): SyncOptions {
  return {
    storage,
    mutators: runtimeMutators,
    view: runtimeView,
    limits: { bodyBytes: MAX_BODY_BYTES },
    onError: () => {},
    inspector: { secret: RUNTIME_INSPECTOR_SECRET, onAction: () => {} },
    ...options,
  };
}
