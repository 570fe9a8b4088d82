import type { Storage } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { Meta } from '../sync/version/records.js';
import { localNotifier, type Notifier, type Unsubscribe } from './notifier.js';

/** Options for {@link storeNotifier}. */
export interface StoreNotifierOptions {
  /** Milliseconds between two reads of the watched spaces' versions. Default: 250. */
  intervalMs?: number;
  /** Told when a read fails (the next one tries again). Default: nothing. */
  onError?: (error: unknown) => void;
}

/** A {@link Notifier} that learns of changes by reading the store, and what it costs. */
export interface StoreNotifier extends Notifier {
  /** Spaces watched now: those with a subscriber in this process. */
  readonly spaces: number;
  /** Reads made so far, one per interval while any space is watched, and one per subscribe. */
  readonly reads: number;
  /** Stops reading; subscriptions made later start it again. */
  close(): void;
}

/**
 * A notifier that needs no other service and no `LISTEN` connection, for stores behind a pooler
 * in transaction mode and for edge functions: every instance reads, once per `intervalMs`, the
 * versions of the spaces it holds poke streams for, all in one read-only transaction (one
 * statement on PostgreSQL), and pokes those whose version moved. A change made on this instance
 * (`notify`) starts that read at once, so its own streams hear of it without waiting.
 * Other instances hear within an interval; a read costs the same however many streams watch.
 *
 * @example
 * const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage) } });
 */
export function storeNotifier(storage: Storage, options: StoreNotifierOptions = {}): StoreNotifier {
  const intervalMs = options.intervalMs ?? 250;
  const local = localNotifier();
  /** By space: its meta key, the version last read, and how many subscriptions watch it. */
  const watched = new Map<string, { key: string; seen: string | undefined; count: number }>();
  let reads = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let reading: Promise<void> | undefined;
  let again = false;

  const versionsOf = async (spaces: ReadonlyArray<readonly [space: string, key: string]>): Promise<Array<string | undefined | typeof UNREAD>> => {
    reads++;
    const keys = spaces.map(([, key]) => key);
    // A store made of several runs transactions of one space each: one read per space, and a
    // part that is down leaves its spaces as they were, not the others.
    const values = storage.parts
      ? (await Promise.allSettled(spaces.map(([space, key]) => storage.transaction((tx) => tx.get(key), { readOnly: true, space })))).map((read) =>
          read.status === 'fulfilled' ? read.value : UNREAD,
        )
      : await storage.transaction((tx) => getMany(tx, keys), { readOnly: true });
    // The epoch too: a store that was reset (restored, re-imported) starts its versions again.
    return values.map((value) => (value === undefined || value === UNREAD ? value : `${(value as Meta).epoch}:${(value as Meta).version}`));
  };

  const read = async () => {
    const spaces = [...watched];
    if (spaces.length === 0) return;
    const versions = await versionsOf(spaces.map(([space, { key }]) => [space, key]));
    spaces.forEach(([space, entry], i) => {
      const version = versions[i];
      if (version === UNREAD || entry.seen === version) return;
      entry.seen = version;
      local.notify(space);
    });
  };

  /** Reads now, or once more after the read under way: a change may have come after it began. */
  const readNow = (): Promise<void> => {
    if (reading !== undefined) {
      again = true;
      return reading;
    }
    clearTimeout(timer);
    reading = read()
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        reading = undefined;
        if (again) {
          again = false;
          void readNow();
        } else schedule();
      });
    return reading;
  };

  const schedule = () => {
    clearTimeout(timer);
    if (watched.size === 0) return;
    timer = setTimeout(() => void readNow(), intervalMs);
    (timer as { unref?: () => void }).unref?.();
  };

  return {
    notify() {
      void readNow();
    },
    async subscribe(space, listener): Promise<Unsubscribe> {
      let entry = watched.get(space);
      if (entry === undefined) {
        const key = new SpaceKeys(space).meta;
        // The version now, before it is watched: any later commit moves it past this.
        const [seen] = await versionsOf([[space, key]]);
        if (seen === UNREAD) throw new Error(`storeNotifier: the store of space ${JSON.stringify(space)} could not be read`);
        entry = watched.get(space) ?? { key, seen, count: 0 };
        watched.set(space, entry);
        if (timer === undefined && reading === undefined) schedule();
      }
      entry.count++;
      const unsubscribe = local.subscribe(space, listener) as Unsubscribe;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        unsubscribe();
        if (--entry.count === 0 && watched.get(space) === entry) watched.delete(space);
        if (watched.size === 0) {
          clearTimeout(timer);
          timer = undefined;
        }
      };
    },
    close() {
      watched.clear();
      clearTimeout(timer);
      timer = undefined;
    },
    get spaces() {
      return watched.size;
    },
    get reads() {
      return reads;
    },
  };
}

/** A space whose store could not be read this time (routed storage only). */
const UNREAD = Symbol('unread');
