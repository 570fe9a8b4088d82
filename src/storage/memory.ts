import { compareUTF8 } from '../base/utf8.js';
import { manySpacesOf, SpaceLocks } from './lock.js';
import { SortedKeys } from './sorted-keys.js';
import type { ScanOptions, Storage, StorageTransaction, StoredValue } from './types.js';

/**
 * An in-memory store: the embedded default, for development, tests and single-process servers.
 * Its data lives as long as the object does.
 *
 * Guarantees (see {@link Storage}): read-write transactions hold their space's lock exclusively
 * and write in place with an undo log, so a failed one is rolled back whole; read-only
 * transactions share it with each other but never with a writer, so each sees one committed
 * state. Spaces lock apart, so one space's slow push never holds up another's pulls or pushes;
 * within a space, a pull waits while a push's mutator awaits something.
 *
 * @example
 * const ctx = createContext({ storage: memoryStorage(), mutators });
 */
export function memoryStorage(): Storage {
  const values = new Map<string, StoredValue>();
  const keys = new SortedKeys();
  const locks = new SpaceLocks();

  function write(undo: UndoLog, key: string, value: StoredValue | undefined): void {
    undo.push([key, values.get(key)]);
    if (value === undefined) {
      if (values.delete(key)) keys.delete(key);
    } else {
      // Set first: if the Map refuses (V8 caps a Map at 2^24 entries), the index stays in step.
      const added = !values.has(key);
      values.set(key, value);
      if (added) keys.add(key);
    }
  }

  return {
    manySpaces: true,
    async transaction(fn, options) {
      const { readOnly, space } = options;
      const spaces = manySpacesOf(options);
      // Writes go in place: a space's lanes cannot run side by side here, so each takes the whole space.
      const hold = <T>(work: () => Promise<T>) => (spaces === undefined ? locks.hold(space, !readOnly, work) : locks.holdMany(spaces, undefined, work));
      return hold(async () => {
        const undo: UndoLog = [];
        let open = true;
        const check = (writing: boolean): void => {
          if (!open) throw new Error('The storage transaction is already finished');
          if (writing && readOnly) throw new Error('Cannot write in a read-only transaction');
        };
        const tx: StorageTransaction = {
          async get(key) {
            check(false);
            return values.get(key);
          },
          async put(key, value) {
            check(true);
            write(undo, key, value);
          },
          async del(key) {
            check(true);
            write(undo, key, undefined);
          },
          async scan(options) {
            check(false);
            return scan(values, keys, options);
          },
        };
        try {
          return await fn(tx);
        } catch (error) {
          // Undo in reverse so a key written twice gets back its value from before the first write.
          for (let i = undo.length - 1; i >= 0; i--) {
            const [key, old] = undo[i]!;
            write([], key, old);
          }
          throw error;
        } finally {
          open = false;
        }
      });
    },
  };
}

type UndoLog = Array<[key: string, previous: StoredValue | undefined]>;

function scan(values: Map<string, StoredValue>, keys: SortedKeys, { prefix, start, limit = Infinity }: ScanOptions): Array<[string, StoredValue]> {
  const out: Array<[string, StoredValue]> = [];
  if (limit <= 0) return out;
  const fromStart = start !== undefined && compareUTF8(start.key, prefix) >= 0;
  const from = fromStart ? start.key : prefix;
  for (const key of keys.from(from, fromStart && start.exclusive === true)) {
    if (!key.startsWith(prefix)) break;
    out.push([key, values.get(key)!]);
    if (out.length >= limit) break;
  }
  return out;
}
