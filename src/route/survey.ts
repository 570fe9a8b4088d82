import type { Storage, StorageTransaction, StoredValue } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { RouteError, type RouteRecord, routeRecordOf } from './route-record.js';
import { directoryKey, type Router } from './routed-storage.js';

/**
 * Where a space's data is, read from every store and from nothing else: not from a placement or
 * a directory, which may be what is wrong. A move checks its router against it before it writes
 * anything, as do the CLI's commands of one space, and `viewsync directory check` checks the
 * directory against it.
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
  const holdings = await Promise.all(
    names.map((name) =>
      stores[name]!.transaction(
        async (tx): Promise<Holding> => {
          const [route, listed] = await getMany(tx, [keys.route, directoryKey(space)]);
          return { record: routeRecordOf(route, space, name), rows: await holdsRows(tx, keys), listed };
        },
        { readOnly: true, space },
      ),
    ),
  );
  return new Map(names.map((name, i) => [name, holdings[i]!]));
}

/**
 * Where `storage` finds `space`'s copy in use, once checked against what the stores hold
 * (`holdings`, a survey taken before, or one taken now). A router told another placement or
 * directory than the servers' would read an empty copy, write a second one, copy an empty space
 * over theirs, or leave the directory naming a store the space left: it is refused, with a
 * RouteError naming `caller`. A space no store holds is wherever the router puts it.
 */
export async function locateWhereHeld(storage: Router, space: string, caller: string, holdings?: Map<string, Holding>): Promise<string> {
  const q = JSON.stringify;
  let seen = holdings ?? (await surveySpace(storage.stores, space));
  for (const [name, { listed }] of seen) {
    if (listed === undefined || name === storage.directory) continue;
    const says = `store ${q(name)} keeps a directory, which lists space ${q(space)} in ${q(listed)}`;
    throw new RouteError(
      storage.directory === undefined
        ? `${caller}: ${says}, but this router has none: give it directory: '${name}' as the servers do (CLI: --directory ${name}); a move without it would leave the space listed in the store it left. Nothing was done`
        : `${caller}: ${says}, but this router's directory is ${q(storage.directory)}: give it the servers' directory (CLI: --directory ${name}). Nothing was done`,
    );
  }
  for (let look = 1; ; look++) {
    const from = await storage.locate(space);
    const { store, candidates } = copyInUse(seen);
    if (store === from || !exists(seen)) return from;
    // A move of the space may have ended between the two reads: read both again, once.
    if (look === 1) {
      seen = await surveySpace(storage.stores, space);
      continue;
    }
    const described = (list: readonly string[]) => list.map((name) => describeHolding(name, space, seen.get(name))).join('; ');
    if (candidates.length > 1)
      throw new RouteError(
        `${caller}: stores ${listNames(candidates)} each hold a copy of space ${q(space)} that could be the one in use (${described(candidates)}): was its placement changed without a directory? Find out which copy the servers use and remove the other first (export it and import it as a space of its own to keep it). Nothing was done`,
      );
    if (store === undefined)
      throw new RouteError(
        `${caller}: no store holds a copy of space ${q(space)} in use, only what a move left (${described([...seen.keys()].filter((name) => seen.get(name)!.rows))}). Nothing was done`,
      );
    throw new RouteError(
      `${caller}: ${describeHolding(store, space, seen.get(store))}, but this router finds its copy in use in ${q(from)} (by its ${storage.directory === undefined ? 'placement rule' : 'directory'}): the placement given to this router is not the servers'. ${SAME_ROUTER}. Nothing was done`,
    );
  }
}

/** What to do when a router is not the servers': said by every refusal that finds so. */
export const SAME_ROUTER =
  "Give it the servers' stores, place and directory (CLI: the same --store names, and --directory when the servers keep one; the CLI places by hash, so a space the servers place by a function of their own is moved from the app, by moveSpace with the servers' context)";

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
