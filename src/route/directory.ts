import { compareUTF8 } from '../base/utf8.js';
import { eachRow } from '../storage/each-row.js';
import type { Storage, StoredValue } from '../storage/types.js';
import { stagingSpaces } from '../sync/dumps/import-batch.js';
import { META_PREFIX, ROUTE_PREFIX, spaceOfMeta, spaceOfRoute } from '../sync/version/keys.js';
import { RouteError, routeRecordOf } from './route-record.js';
import { DIRECTORY_PREFIX, directoryKey, type Router } from './routed-storage.js';
import { copyInUse, describeHolding, type Holding, listNames } from './survey.js';

/**
 * A directory checked against what the stores hold, and repaired. A directory row is written
 * once, when a space is first used, and rewritten by each move that knows the directory; a move
 * made without it (or a directory restored from a backup) leaves rows that name a store the
 * space left. Routers still find the space by the route records the move left there, until that
 * store is dropped: then nothing leads to the space. The check finds such rows before that.
 */

/** A space whose directory row does not lead straight to its copy in use. */
export interface DirectoryProblem {
  space: string;
  /** What its directory row says (a store's name), or undefined when it has none. */
  listed: StoredValue | undefined;
  /** The store holding its copy in use, found from route records and rows alone; undefined when no store does, or several could. */
  inUse: string | undefined;
  /**
   * `stale`: the row names another store of the router than the one in use; `unknown-store`: it
   * names no store of the router; `missing`: no row, while a store holds the space; `ambiguous`:
   * several stores hold a copy that could be in use, so no row can be right.
   */
  kind: 'stale' | 'unknown-store' | 'missing' | 'ambiguous';
  /** What is wrong, and what a repair does about it, in a sentence. */
  reason: string;
}

/**
 * Every space whose directory row does not name the store holding its copy in use, in the
 * order of their names: reads every store's route records, meta records and import staging
 * areas, and the whole directory, a page per transaction (nothing waits behind it).
 */
export async function checkDirectory(storage: Router): Promise<DirectoryProblem[]> {
  const directory = directoryOf(storage);
  const names = Object.keys(storage.stores);
  const listed = new Map<string, StoredValue>();
  await eachRow(directory, DIRECTORY_PREFIX, (key, value) => listed.set(spaceOfRoute(ROUTE_PREFIX + key.slice(DIRECTORY_PREFIX.length)), value));
  const held = await Promise.all(names.map((name) => holdingsOf(storage.stores[name]!)));
  const spaces = new Set(listed.keys());
  for (const { records, rows } of held) for (const space of [...records.keys(), ...rows]) spaces.add(space);
  const problems: DirectoryProblem[] = [];
  for (const space of [...spaces].sort(compareUTF8)) {
    const holdings = new Map<string, Holding>(
      names.map((name, i) => [name, { record: routeRecordOf(held[i]!.records.get(space), space, name), rows: held[i]!.rows.has(space), listed: undefined }]),
    );
    const problem = problemOf(space, listed.get(space), holdings, names);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * Points each row {@link checkDirectory} finds at the store holding the space's copy in use, or
 * writes it where it is missing; leaves a space no store holds, or several could (`left`). A row
 * changed since it was read (a move, a first use) is left too: run the check again.
 */
export async function repairDirectory(storage: Router): Promise<{ repaired: DirectoryProblem[]; left: DirectoryProblem[] }> {
  const directory = directoryOf(storage);
  const repaired: DirectoryProblem[] = [];
  const left: DirectoryProblem[] = [];
  for (const problem of await checkDirectory(storage)) {
    const { space, inUse } = problem;
    if (problem.kind === 'ambiguous' || inUse === undefined) {
      left.push(problem);
      continue;
    }
    const key = directoryKey(space);
    // Only the row as the check read it: a process that placed or moved the space since knows better.
    const done = await directory.transaction(
      async (tx) => {
        if (JSON.stringify(await tx.get(key)) !== JSON.stringify(problem.listed)) return false;
        await tx.put(key, inUse);
        return true;
      },
      { readOnly: false, space },
    );
    if (done) repaired.push(problem);
    else left.push({ ...problem, reason: `had its directory row changed while it was being repaired (a move, or a first use): check again` });
  }
  return { repaired, left };
}

/** The names of the stores among `stores` that hold directory rows: the servers keep a directory there. */
export async function directoryStores(stores: Readonly<Record<string, Storage>>): Promise<string[]> {
  const names = Object.keys(stores);
  const found = await Promise.all(names.map((name) => stores[name]!.transaction((tx) => tx.scan({ prefix: DIRECTORY_PREFIX, limit: 1 }), { readOnly: true })));
  return names.filter((_, i) => found[i]!.length > 0);
}

function directoryOf(storage: Router): Storage {
  if (storage.directory === undefined) throw new RouteError('This routed storage keeps no directory (options.directory): there is nothing to check');
  return storage.stores[storage.directory]!;
}

/** What one store holds: its route records by space, and the spaces it holds rows of (a meta record, or an import's staging area). */
async function holdingsOf(store: Storage): Promise<{ records: Map<string, StoredValue>; rows: Set<string> }> {
  const records = new Map<string, StoredValue>();
  await eachRow(store, ROUTE_PREFIX, (key, value) => records.set(spaceOfRoute(key), value));
  const rows = new Set<string>(await stagingSpaces(store));
  await eachRow(store, META_PREFIX, (key) => rows.add(spaceOfMeta(key)));
  return { records, rows };
}

function problemOf(
  space: string,
  listed: StoredValue | undefined,
  holdings: ReadonlyMap<string, Holding>,
  names: readonly string[],
): DirectoryProblem | undefined {
  const { store: inUse, candidates } = copyInUse(holdings);
  const says = listed === undefined ? 'has no directory row' : `is listed in ${JSON.stringify(listed)}`;
  if (candidates.length > 1) {
    const why = candidates.map((name) => describeHolding(name, space, holdings.get(name))).join('; ');
    return {
      space,
      listed,
      inUse,
      kind: 'ambiguous',
      reason: `${says}, but stores ${listNames(candidates)} each hold a copy that could be the one in use (${why}): find out which one the servers use and remove the other; a repair leaves it`,
    };
  }
  if (listed === undefined) {
    return inUse === undefined
      ? undefined
      : {
          space,
          listed,
          inUse,
          kind: 'missing',
          reason: `has no directory row, while store ${JSON.stringify(inUse)} holds its copy in use (the servers would find it there on first use); a repair writes it`,
        };
  }
  if (typeof listed !== 'string' || !names.includes(listed)) {
    const fix =
      inUse === undefined
        ? `and no store among them holds it: a repair leaves it (add the store back if it holds the space's data)`
        : `while ${JSON.stringify(inUse)} holds its copy in use: a repair points the row there`;
    return {
      space,
      listed,
      inUse,
      kind: 'unknown-store',
      reason: `is listed in ${JSON.stringify(listed)}, which is not one of the stores (${names.join(', ')}), ${fix}`,
    };
  }
  if (inUse !== undefined && inUse !== listed) {
    return {
      space,
      listed,
      inUse,
      kind: 'stale',
      reason: `is listed in ${JSON.stringify(listed)}, while ${JSON.stringify(inUse)} holds its copy in use (found through route records while ${JSON.stringify(listed)} keeps them, lost once it is dropped): a repair points the row there`,
    };
  }
  return undefined;
}
