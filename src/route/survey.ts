import type { Storage, StorageTransaction, StoredValue } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { SpaceKeys } from '../sync/keys.js';
import { type RouteRecord, routeRecordOf } from './route-record.js';
import { directoryKey } from './routed-storage.js';

/**
 * Where a space's data is, read from every store and from nothing else: not from a placement or
 * a directory, which may be what is wrong. A move checks its router against it before it writes
 * anything, and `viewsync directory check` checks the directory against it.
 */

/** What one store holds of a space. */
export interface Holding {
  /** Its route record of the space. */
  record: RouteRecord | undefined;
  /** Whether it holds any other row of the space: its meta record, an entry, a client, a staged import… */
  rows: boolean;
  /** Its directory row of the space (the store it names), when it keeps a directory. */
  listed: StoredValue | undefined;
}

/** What each store holds of `space`, by store name: one read-only transaction per store. */
export async function surveySpace(stores: Readonly<Record<string, Storage>>, space: string): Promise<Map<string, Holding>> {
  const keys = new SpaceKeys(space);
  const names = Object.keys(stores);
  const holdings = await Promise.all(names.map((name) => stores[name]!.transaction(async (tx): Promise<Holding> => {
    const [route, listed] = await getMany(tx, [keys.route, directoryKey(space)]);
    return { record: routeRecordOf(route, space, name), rows: await holdsRows(tx, keys), listed };
  }, { readOnly: true, space })));
  return new Map(names.map((name, i) => [name, holdings[i]!]));
}

/** Whether a store holds any row of the space but its route record: its meta record, else one short scan per kind of row until one finds some. */
export async function holdsRows(tx: StorageTransaction, keys: SpaceKeys): Promise<boolean> {
  if ((await tx.get(keys.meta)) !== undefined) return true;
  const { versioned, whole } = keys.rowPrefixes;
  for (const prefix of [...versioned, ...whole]) if ((await tx.scan({ prefix, limit: 1 })).length > 0) return true;
  return false;
}

/**
 * The store holding the copy in use, told by the holdings alone: the one whose route record says
 * so (`here`, `moving`, or `incoming` complete with its source `moved` to it: a move killed after
 * its commit point), or, when none does, the one holding rows with no route record (a space never
 * moved). Rows under an `incoming` or `moved` record are what a move left, never in use.
 * `candidates` lists every store that could be it: more than one, and which is in use depends on
 * who asks (a placement changed without a directory): `store` is then undefined.
 */
export function copyInUse(holdings: ReadonlyMap<string, Holding>): { store: string | undefined; candidates: string[] } {
  const candidates: string[] = [];
  for (const [name, { record, rows }] of holdings) {
    if (record === undefined ? rows : record.state === 'here' || record.state === 'moving' || committedTo(holdings, name, record)) candidates.push(name);
  }
  return { store: candidates.length === 1 ? candidates[0] : undefined, candidates };
}

/** Whether any store holds a row of the space (its route record and directory row aside). */
export function exists(holdings: ReadonlyMap<string, Holding>): boolean {
  return [...holdings.values()].some(({ rows }) => rows);
}

/** What a store holds of the space, said in a few words for a message. */
export function describeHolding(name: string, space: string, holding: Holding | undefined): string {
  const [store, of] = [JSON.stringify(name), `space ${JSON.stringify(space)}`];
  const record = holding?.record;
  if (record === undefined) return holding?.rows ? `store ${store} holds rows of ${of} with no route record` : `store ${store} holds nothing of ${of}`;
  return `store ${store}'s route record of ${of} says ${record.state}${record.state === 'here' || record.state === 'incoming' ? '' : ` (to ${JSON.stringify(record.to)})`}`;
}

/** "a", "a" and "b", "a", "b" and "c": names for a message. */
export function listNames(names: readonly string[]): string {
  const quoted = names.map((name) => JSON.stringify(name));
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1)}`;
}

/** Whether `record`, in store `name`, is a complete copy whose source passed the commit point (step 4 done, step 5 not). */
function committedTo(holdings: ReadonlyMap<string, Holding>, name: string, record: RouteRecord): boolean {
  if (record.state !== 'incoming' || record.complete === undefined) return false;
  const source = holdings.get(record.from)?.record;
  return source?.state === 'moved' && source.to === name && source.move === record.move;
}
