import { TemporaryError } from '../base/errors.js';
import type { RangeRead, RangeRow, Storage, StorageTransaction, StoredValue, StoreParts, TransactionOptions } from '../storage/types.js';
import { eachRow } from '../storage/each-row.js';
import { ROUTE_PREFIX, SpaceKeys } from '../sync/version/keys.js';
import { type Placement, placementOf } from './placement.js';
import { checkRoute, Elsewhere, inUseHere, type RouteCheck, RoutedTransaction } from './route-check.js';
import { RouteError, type RouteRecord, routeRecordOf } from './route-record.js';
import { isUnreachable } from '../storage/unreachable.js';
import { remember as rememberFor } from '../base/remember.js';

/** Options for {@link routedStorage}. */
export interface RoutedStorageOptions {
  /** The stores, by name. A name is what route records and the directory keep: rename none that hold spaces. */
  stores: Readonly<Record<string, Storage>>;
  /**
   * Where a space lives until it is moved: `'hash'` (the default) spreads spaces over the stores
   * by rendezvous hashing of their names; a function names the store itself (by tenant, region,
   * plan). Without a `directory`, this rule must give every existing space the same answer for
   * ever, so adding a store to `'hash'` needs one (see the README's "Scaling out").
   */
  place?: Placement;
  /**
   * The name of a store that keeps a directory of where each space lives: a space is placed once,
   * when first used, and found by the directory after that, so stores can be added and the rule
   * changed without moving anything. A space is placed where a store already holds it (a
   * database that held spaces before the directory did), else by `place`. Costs one read of the
   * directory store per space and process (then kept in memory), and a read of every store the
   * first time a space is used at all. Default: none; `place` alone says where a space is.
   */
  directory?: string;
}

/** A store made of several, each space in one of them: see {@link routedStorage}. */
export interface RoutedStorage extends Storage {
  readonly stores: Readonly<Record<string, Storage>>;
  /** The name of the store that keeps the directory, when there is one (`options.directory`). */
  readonly directory: string | undefined;
  readonly parts: StoreParts;
}

/**
 * What moves, the directory's check and the CLI need of a routed storage beyond the storage
 * interface; kept off the storage itself ({@link routerOf}), so none of it is public API.
 */
export interface Router extends StoreParts {
  readonly directory: string | undefined;
  /** Where `space` is looked for first: the directory's answer, or the placement rule's. */
  home(space: string): Promise<string>;
  /** Records that `space` is at `store` now, in the directory when there is one (moves call it). */
  settle(space: string, store: string): Promise<void>;
}

/**
 * One store made of several: each space lives in one of `options.stores`, and every transaction
 * of a space runs in that store. A space's transactions never span two spaces, so spaces can live
 * on different databases; give this to a context as its `storage`, and pushes, pulls, pokes,
 * views, housekeeping, the backend door and the CLI all follow it. A store that is down fails
 * only the spaces it holds, with a `TemporaryError` (503, `Retry-After`) naming it.
 *
 * Spaces move between the stores with `moveSpace`, while in use. Each store keeps, per space it
 * holds or held, a small route record (`r/<space>/`) saying whether its copy is the one in use
 * or where the space went, and every transaction reads it with its first read (in the same round
 * trip: `getMany`, `readMany`), so no process ever works on a copy that is not in use, however old
 * what it remembers. While a move switches a space over, its writes wait, at most until the move's
 * `switchTimeoutMs` runs out; other spaces never wait.
 *
 * Every transaction must name its space (`options.space`): viewsync's own always do.
 *
 * @example
 * const storage = routedStorage({ stores: { a: postgresStorage(sqlA), b: postgresStorage(sqlB), c: postgresStorage(sqlC) } });
 * const ctx = createContext({ storage, mutators, space: (request) => new URL(request.url).searchParams.get('space') ?? '' });
 */
export function routedStorage(options: RoutedStorageOptions): RoutedStorage {
  const stores = { ...options.stores };
  const names = Object.keys(stores);
  if (names.length === 0) throw new TypeError('routedStorage: options.stores names no store');
  const seen = new Map<Storage, string>();
  for (const [name, store] of Object.entries(stores)) {
    if (typeof store?.transaction !== 'function') throw new TypeError(`routedStorage: options.stores.${name} is not a Storage`);
    // Two names for one store would let a move copy a space onto itself, and then remove it.
    if (seen.has(store)) throw new TypeError(`routedStorage: options.stores.${name} is the same store as options.stores.${seen.get(store)}`);
    if (routers.has(store)) throw new TypeError(`routedStorage: options.stores.${name} is itself a routed storage: name its stores here instead`);
    seen.set(store, name);
  }
  if (options.directory !== undefined && !(options.directory in stores)) {
    throw new TypeError(
      `routedStorage: options.directory names ${JSON.stringify(options.directory)}, which is not one of options.stores (${names.join(', ')})`,
    );
  }
  const place = placementOf(options.place ?? 'hash', names);
  /** Where each space was last found, when that is not its home: most spaces never move. */
  const found = new Map<string, string>();
  /** The directory's answers, so that it is read once per space and process. */
  const homes = new Map<string, string>();

  // Kept to REMEMBERED spaces each, the oldest forgotten first: a flood of spaces cannot grow them.
  const remember = (map: Map<string, string>, space: string, store: string) => rememberFor(map, space, store, REMEMBERED);

  const home = async (space: string): Promise<string> => {
    if (options.directory === undefined) return place(space);
    const known = homes.get(space);
    if (known !== undefined) return known;
    const key = directoryKey(space);
    const directory = stores[options.directory]!;
    const listed = async (tx: StorageTransaction): Promise<string | undefined> => {
      const name = await tx.get(key);
      if (name === undefined || (typeof name === 'string' && name in stores)) return name;
      throw new RouteError(
        `The directory (in store ${JSON.stringify(options.directory)}) lists space ${JSON.stringify(space)} in store ${JSON.stringify(name)}, which is not one of options.stores (${names.join(', ')}): if that store was dropped after the space left it, 'viewsync directory repair' points the row at the store that holds the space`,
      );
    };
    let store = await directory.transaction(listed, { readOnly: true, space });
    if (store === undefined) {
      // A space the directory has not seen may still have data: in a database that held it
      // before the directory did. It stays there, rather than start again empty where the rule says.
      const placed = (await holderOf(space)) ?? place(space);
      // Placed once, by the first process to use the space; the space's lock orders two first uses.
      store = await directory.transaction(
        async (tx) => {
          const first = await listed(tx);
          if (first !== undefined) return first;
          await tx.put(key, placed);
          return placed;
        },
        { readOnly: false, space },
      );
    }
    remember(homes, space, store);
    return store;
  };

  /** The store holding `space`'s copy in use, found by asking each store, when one has it; the directory's first look. */
  const holderOf = async (space: string): Promise<string | undefined> => {
    const keys = new SpaceKeys(space);
    const found = await Promise.all(
      names.map((name) => stores[name]!.transaction((tx) => Promise.all([tx.get(keys.route), tx.get(keys.meta)]), { readOnly: true, space })),
    );
    const records = found.map(([route], i) => routeRecordOf(route, space, names[i]!));
    const inUse = records.findIndex((record) => record?.state === 'here' || record?.state === 'moving');
    if (inUse >= 0) return names[inUse];
    const data = found.findIndex(([route, meta]) => route === undefined && meta !== undefined);
    return data >= 0 ? names[data] : undefined;
  };

  /**
   * Runs `work` on the store holding `space`'s copy in use, following route records from where
   * the space was last found; resolves with its result and that store's name.
   */
  const run = async <T>(space: string, readOnly: boolean, work: (store: Storage, check: RouteCheck) => Promise<T>): Promise<[T, string]> => {
    const keys = new SpaceKeys(space);
    const start = await home(space).catch((error: unknown) => {
      // The directory's store, or one asked where a new space's data is, is down: try again later.
      throw isUnreachable(error)
        ? new TemporaryError(`The stores could not say where space ${JSON.stringify(space)} is: one is unavailable`, { cause: error })
        : error;
    });
    let name = found.get(space) ?? start;
    /** The move whose source sent us here, to tell a copy it made complete from one it left half made. */
    let via: { from: string; move: string } | undefined;
    for (let hop = 0; ; hop++) {
      if (hop >= MAX_HOPS)
        throw new TemporaryError(`Space ${JSON.stringify(space)} could not be found: its route records lead in a circle (${name}); is a move of it running?`);
      const store = stores[name];
      if (store === undefined)
        throw new Error(
          `A route record of space ${JSON.stringify(space)} names store ${JSON.stringify(name)}, which is not one of options.stores (${names.join(', ')})`,
        );
      const check: RouteCheck = { key: keys.route, space, store: name, home: start, readOnly, now: Date.now(), refused: undefined };
      try {
        const result = await work(store, check);
        // A caller that caught the refusal (a pull sharing a read keeps each pull's failure its own) still goes elsewhere.
        if (check.refused !== undefined) throw check.refused;
        if (name === start) found.delete(space);
        else remember(found, space, name);
        return [result, name];
      } catch (error) {
        if (!(error instanceof Elsewhere))
          throw isUnreachable(error)
            ? new TemporaryError(`Store ${JSON.stringify(name)}, which holds space ${JSON.stringify(space)}, is unavailable`, { cause: error })
            : error;
        const { record } = error;
        if (record === undefined) {
          name = start;
        } else if (record.state === 'moving') {
          // Writes wait out the switch, polling; the move's lease bounds the wait.
          await sleep(Math.max(1, Math.min(POLL_MS, record.until - Date.now())));
          hop--;
        } else if (record.state === 'moved') {
          via = { from: name, move: record.move };
          name = record.to;
        } else if (record.state === 'incoming' && record.complete !== undefined && via?.from === record.from && via.move === record.move) {
          // The source passed its commit point and the mover stopped before promoting: finish it.
          await promote(store, keys.route, record, space, name);
        } else if (record.state === 'incoming') {
          name = record.from;
        }
      }
    }
  };

  const router: Router = {
    stores,
    directory: options.directory,
    async locate(space) {
      const [, name] = await run(space, true, (store, check) =>
        store.transaction(async (tx) => checkRoute(check, await tx.get(check.key)), { readOnly: true, space }),
      );
      return name;
    },
    home,
    async settle(space, store) {
      if (options.directory !== undefined) {
        await stores[options.directory]!.transaction((tx) => tx.put(directoryKey(space), store), { readOnly: false, space });
        remember(homes, space, store);
      }
      if (store === (await home(space))) found.delete(space);
      else remember(found, space, store);
    },
    async inUse(store, spaces) {
      const records = new Map<string, StoredValue>();
      await eachRow(stores[store]!, ROUTE_PREFIX, (key, value) => records.set(key, value));
      const here: string[] = [];
      for (const space of spaces) {
        const key = new SpaceKeys(space).route;
        if (inUseHere({ store, home: await home(space) }, routeRecordOf(records.get(key), space, store))) here.push(space);
      }
      return here;
    },
  };

  const routed: RoutedStorage = {
    stores,
    directory: options.directory,
    // A space may move to any of them: the bound is the tightest.
    ...(names.some((name) => stores[name]!.maxKeyBytes !== undefined) && {
      maxKeyBytes: Math.min(...names.map((name) => stores[name]!.maxKeyBytes ?? Infinity)),
    }),
    ...(names.some((name) => stores[name]!.catchUpMs !== undefined) && { catchUpMs: Math.max(...names.map((name) => stores[name]!.catchUpMs ?? 0)) }),
    async transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions): Promise<T> {
      const space = spaceOf(options);
      const [result] = await run(space, options.readOnly, (store, check) => store.transaction((tx) => fn(new RoutedTransaction(tx, check)), options));
      return result;
    },
    ...(names.every((name) => stores[name]!.readMany !== undefined) && {
      async readMany(reads: readonly RangeRead[], options: { space?: string | undefined }): Promise<RangeRow[][]> {
        const space = spaceOf(options);
        const [rows] = await run(space, true, async (store, check) => {
          // The route record as one more range of the same statement: no round trip of its own.
          const [routeRows, ...rest] = await store.readMany!([{ prefix: check.key, limit: 1 }, ...reads], options);
          const route = routeRows?.[0];
          checkRoute(check, route?.[0] === check.key ? route[1] : undefined);
          return rest;
        });
        return rows;
      },
    }),
    parts: { stores, locate: router.locate, inUse: router.inUse },
  };
  routers.set(routed, router);
  return routed;
}

/** The router of `storage`, when it is a {@link routedStorage}. */
export function routerOf(storage: Storage): Router | undefined {
  return routers.get(storage);
}

const routers = new WeakMap<Storage, Router>();

/** Makes an `incoming` copy whose source has passed its commit point the copy in use (step 5 of a move). */
async function promote(store: Storage, key: string, record: RouteRecord & { state: 'incoming' }, space: string, name: string): Promise<void> {
  await store.transaction(
    async (tx) => {
      const now = routeRecordOf(await tx.get(key), space, name);
      if (now?.state === 'incoming' && now.move === record.move && now.complete !== undefined)
        await tx.put(key, { state: 'here', from: record.from, move: record.move });
    },
    { readOnly: false, space },
  );
}

function spaceOf(options: { space?: string | undefined }): string {
  if (typeof options.space !== 'string') {
    throw new TypeError('A routed storage runs transactions of one space: options.space must name it (every transaction viewsync makes does)');
  }
  return options.space;
}

/** The directory's rows' keys start with this: `d/<space>/`, shaped as route keys are. */
export const DIRECTORY_PREFIX = 'd/';

/** The directory's row of `space`, in the directory store: the name of the store it is placed in. */
export function directoryKey(space: string): string {
  return DIRECTORY_PREFIX + new SpaceKeys(space).route.slice(ROUTE_PREFIX.length);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How many route records a request may follow before it gives up: a space moved back and forth while it looked. */
const MAX_HOPS = 8;
/** How often a write waiting for a switch looks again. */
const POLL_MS = 20;
/** Spaces whose place is remembered per map. */
const REMEMBERED = 100_000;
