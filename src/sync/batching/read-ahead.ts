import type { Storage, StorageTransaction } from '../../storage/types.js';
import type { StorageReader } from '../../storage/write-buffer.js';
import { remember } from '../../base/remember.js';

/**
 * Read-ahead for group commit (group-commit.ts): the keys a job of one name (a client group's
 * push) read last time, fetched with the whole batch's first `getMany` the next time such a job
 * queues. A mutator's reads cannot be told before it runs, and each one it makes alone is a round
 * trip to a database, taken one job after another while the space's lock is held; a client
 * tends to touch the same keys push after push, so last time's reads are a good guess. A guess
 * is only ever read ahead, inside the same transaction under the same lock, so a wrong or stale
 * one costs a row read for nothing, never a wrong value.
 */
export class ReadAhead {
  /** Keys learned per store, by space and job name, the latest used kept. */
  readonly #learned = new WeakMap<Storage, Map<string, readonly string[]>>();

  /** The keys jobs named `names` read last time in `space` of `storage`. */
  keys(storage: Storage, space: string, names: ReadonlyArray<string | undefined>): string[] {
    const learned = this.#learned.get(storage);
    if (learned === undefined) return [];
    return names.flatMap((name) => (name === undefined ? [] : (learned.get(learnedKey(space, name)) ?? [])));
  }

  /**
   * `tx` with the keys its `get` and `getMany` read noted into `read`, but for those in `declared`
   * (read first anyway): at most {@link KEYS_PER_JOB}, each of at most {@link MAX_KEY_LENGTH}
   * characters, so that what a hostile push makes a mutator read holds little memory here. Only
   * keys the store read: one it refused would fail the next batch's first read, every push in it.
   */
  recording(tx: StorageTransaction, read: Set<string>, declared: readonly string[]): StorageReader {
    const note = (key: string) => {
      if (read.size < KEYS_PER_JOB && key.length <= MAX_KEY_LENGTH && !declared.includes(key)) read.add(key);
    };
    return {
      get: async (key) => {
        const value = await tx.get(key);
        note(key);
        return value;
      },
      ...(tx.getMany && {
        getMany: async (keys: readonly string[]) => {
          const values = await tx.getMany!(keys);
          keys.forEach(note);
          return values;
        },
      }),
      scan: (options) => tx.scan(options),
      ...(tx.scanText && { scanText: (options: Parameters<NonNullable<StorageTransaction['scanText']>>[0]) => tx.scanText!(options) }),
      ...(tx.incarnation && { incarnation: () => tx.incarnation!() }),
    };
  }

  /** Keeps what a job named `name` read (see {@link recording}) for next time. */
  learn(storage: Storage, space: string, name: string, read: ReadonlySet<string>): void {
    let learned = this.#learned.get(storage);
    if (learned === undefined) this.#learned.set(storage, (learned = new Map()));
    const key = learnedKey(space, name);
    if (read.size > 0) remember(learned, key, [...read], JOBS_KEPT);
    else learned.delete(key);
  }
}

/** Most keys learned of one job: a mutator that reads more gets the first ones read ahead. */
export const KEYS_PER_JOB = 8;
/** Longest key learned, in characters; a longer one is read when asked for, as without read-ahead. */
export const MAX_KEY_LENGTH = 256;
/** Most job names whose keys a store keeps (per process): at most 8 MiB of keys, far less in practice. */
export const JOBS_KEPT = 2_048;

function learnedKey(space: string, name: string): string {
  return `${space}\u0000${name}`;
}
