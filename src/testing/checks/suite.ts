import type { ScanOptions, Storage, StorageTransaction, StoredValue } from '../../storage/types.js';

/**
 * What each group of conformance checks is written against: `describe` and `it` that collect
 * named checks (any runner, or none, runs them), the store to check, and the options.
 */
export interface Suite {
  describe(group: string, body: () => void): void;
  it: ((name: string, run: () => Promise<void>) => void) & {
    each(rows: ReadonlyArray<readonly [string, boolean]>): (name: string, run: (label: string, flag: boolean) => Promise<void>) => void;
  };
  create: () => Storage | Promise<Storage>;
  /** Cases per property check. */
  runs: number;
  /** The store runs one transaction at a time (see ConformanceOptions.oneAtATime). */
  oneAtATime: boolean;
  /** The store locks a space's parts apart (see ConformanceOptions.lanesApart). */
  lanesApart: boolean;
}

/** Keys where UTF-8 and UTF-16 order disagree: surrogate pairs (above U+FFFF) against U+E000-U+FFFF. */
export const UNICODE_KEYS = ['a', 'a\uFFFF', 'a😀', 'a𝄞', 'é', '\u0800', '\uD7FF', '\uE000', '\uFFFD', '\uFFFF', '😀', '😀a', '😀😀', '𝄞', '\u{10FFFF}'];

export const RW = { readOnly: false };
export const RO = { readOnly: true };

export class Rollback extends Error {}

/** UTF-8 byte order, by encoding: an oracle apart from the compareUTF8 the stores use. */
export function compareBytes(a: string, b: string): number {
  const [x, y] = [encoder.encode(a), encoder.encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

const encoder = new TextEncoder();

export function sortedEntries(map: ReadonlyMap<string, StoredValue>): Array<[string, StoredValue]> {
  return [...map].sort(([a], [b]) => compareBytes(a, b));
}

export async function putAll(storage: Storage, entries: ReadonlyArray<readonly [string, StoredValue]>): Promise<void> {
  await storage.transaction(async (tx) => {
    for (const [key, value] of entries) await tx.put(key, value);
  }, RW);
}

/** Removes every entry. */
export async function clear(storage: Storage): Promise<void> {
  await storage.transaction(async (tx) => {
    for (const [key] of await tx.scan({ prefix: '' })) await tx.del(key);
  }, RW);
}

export function read<T>(storage: Storage, fn: (tx: StorageTransaction) => Promise<T>): Promise<T> {
  return storage.transaction(fn, RO);
}

export function scan(storage: Storage, options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>> {
  return read(storage, (tx) => tx.scan(options));
}

export function keysOf(entries: ReadonlyArray<readonly [string, StoredValue]>): string[] {
  return entries.map(([key]) => key);
}

/** A fixed shuffle, so insertion order never matches key order yet failures reproduce. */
export function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  let seed = 12345;
  for (let i = out.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = (seed >>> 8) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * 20 read-write transactions, the i-th setting both `keys` to i, one, an await, then the other;
 * `alongside` runs as each starts (a reader to race them). Resolves to the writers.
 */
export function writersOfBoth(storage: Storage, keys: readonly [string, string], alongside: () => void): Array<Promise<unknown>> {
  return Array.from({ length: 20 }, (_, n) => {
    const writing = storage.transaction(async (tx) => {
      await tx.put(keys[0], n + 1);
      await tick();
      await tx.put(keys[1], n + 1);
      await tick();
    }, RW);
    alongside();
    return writing;
  });
}

export function tick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
