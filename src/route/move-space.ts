import type { Storage, StorageTransaction } from '../storage/types.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { catchUp, copyAll, removeAll } from './copy.js';
import { RouteError, type RouteRecord, routeRecordOf } from './route-record.js';
import type { Router } from './routed-storage.js';
import { exists, holdsRows, locateWhereHeld, SAME_ROUTER, surveySpace } from './survey.js';

/** Options for `moveSpace`. */
export interface MoveOptions {
  /**
   * The longest the space's writes may wait while the move switches it over, in milliseconds:
   * pushes that come meanwhile wait (they do not fail), and if the switch has not finished by
   * then (a mover killed midway, a store too slow), the space takes writes again where it was and
   * this move tries again, up to three times. From 100 to 60,000; default: 2,000.
   */
  switchTimeoutMs?: number;
  /** Told how far the move got; the move waits for what it returns (a promise), so it can be slowed. */
  onProgress?: (progress: MoveProgress) => void | Promise<void>;
}

/** How far a move got. */
export interface MoveProgress {
  /**
   * `copying`: rows are copied from one snapshot while the space is used; `catching-up`: what
   * changed meanwhile is copied; `switching`: the space's writes wait for the last changes to be
   * copied; `committed`: the source has handed the space over (past this, the target's copy is
   * the one in use, whatever happens to the mover); `switched`: the target's copy says so too;
   * `cleaning`: the source's rows are being removed.
   */
  phase: 'copying' | 'catching-up' | 'switching' | 'committed' | 'switched' | 'cleaning';
  /** Rows copied, or removed, so far in this phase. */
  rows: number;
}

/** What a move did. */
export interface MoveResult {
  /** The store the space was in, and the one it is in now. */
  from: string;
  to: string;
  /** False when the space was already there (any clean-up an earlier, killed move left was done). */
  moved: boolean;
  /** Rows copied in all. */
  rows: number;
  /** How long the space's writes waited for the switch, in milliseconds. */
  switchMs: number;
  /** How long the whole move took, in milliseconds. */
  totalMs: number;
}

/**
 * Moves `space` to store `to` while it is used (see `moveSpace` in the backend door, and
 * src/route/route-record.ts for the order of its steps and why a move killed anywhere leaves one
 * copy in use, and running it again finishes it).
 */
export async function moveSpaceBetween(storage: Router, space: string, to: string, options: MoveOptions = {}): Promise<MoveResult> {
  const started = performance.now();
  const switchTimeoutMs = options.switchTimeoutMs ?? 2_000;
  // Pushes wait out a switch holding their requests open: a minute is already longer than most clients wait.
  if (!Number.isFinite(switchTimeoutMs) || switchTimeoutMs < 100 || switchTimeoutMs > 60_000)
    throw new RangeError(`moveSpace: options.switchTimeoutMs must be from 100 to 60,000 (ms), got ${switchTimeoutMs}`);
  const target = storage.stores[to];
  if (target === undefined)
    throw new RangeError(`moveSpace: no store is named ${JSON.stringify(to)} (the stores are ${Object.keys(storage.stores).join(', ')})`);
  const keys = new SpaceKeys(space);
  const progress = async (phase: MoveProgress['phase'], rows: number) => options.onProgress?.({ phase, rows });
  /** Writes `next` as `store`'s record when its record passes `when`; resolves with whether it did. */
  const swap = (store: Storage, name: string, when: (now: RouteRecord | undefined) => boolean, next: RouteRecord) =>
    store.transaction(
      async (tx) => {
        if (!when(routeRecordOf(await tx.get(keys.route), space, name))) return false;
        await tx.put(keys.route, next);
        return true;
      },
      { readOnly: false, space },
    );

  // Where the copy in use is now, checked against where the data is: a move killed after its commit point is finished on the way.
  const from = await locateChecked(storage, space);
  const source = storage.stores[from]!;
  await cleanUpAfter(storage, space, from);
  if (from === to) {
    // A directory row left naming a store the space left (a move made without the directory) is
    // followed through route records only while that store is listed: point it here.
    if (storage.directory !== undefined && (await storage.home(space)) !== to) await storage.settle(space, to);
    return { from, to, moved: false, rows: 0, switchMs: 0, totalMs: performance.now() - started };
  }

  const move = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  const ours = (now: RouteRecord | undefined) => now?.state === 'incoming' && now.move === move;
  // A switch a killed move left: end it, so that the space takes writes while this move copies.
  await swap(source, from, (now) => now?.state === 'moving', { state: 'here' });
  // 1. The target's copy is not in use while it is made: whoever comes to it is sent to the source.
  await target.transaction(
    async (tx) => {
      const previous = routeRecordOf(await tx.get(keys.route), space, to);
      if (previous?.state === 'here' || previous?.state === 'moving')
        throw new RouteError(
          `moveSpace: store ${JSON.stringify(to)} holds a copy of space ${JSON.stringify(space)} that says it is in use, though ${JSON.stringify(from)} does too: is another move of it running?`,
        );
      // The target is cleared next, and only rows a move left there may go: a half-made copy
      // (`incoming`), or those of a source a move left (`moved`). Rows with no record are a copy
      // some router uses: its placement is not this router's.
      if (previous === undefined && (await holdsRows(tx, keys)))
        throw new RouteError(
          `moveSpace: store ${JSON.stringify(to)} holds rows of space ${JSON.stringify(space)} with no route record, which this move would clear, though this router finds its copy in use in ${JSON.stringify(from)}: the placement given to this router is not the servers'. ${SAME_ROUTER}. Nothing was moved`,
        );
      await tx.put(keys.route, { state: 'incoming', from, move });
    },
    { readOnly: false, space },
  );
  await removeAll(target, space);
  let rows = 0;
  const stillOurs = (tx: StorageTransaction) => checkOurs(tx, keys, ours, space, to);
  let version = await copyAll(source, target, space, stillOurs, (count) => progress('copying', (rows += count)));
  // 2. While the space takes writes: copy what changed, until little is left to copy in the switch.
  for (let pass = 0; pass < CATCH_UP_PASSES; pass++) {
    const step = await catchUp(source, target, space, version, stillOurs);
    version = step.version;
    rows += step.rows;
    await progress('catching-up', rows);
    if (step.rows <= SMALL) break;
  }
  // 3. The switch: writes wait while the last changes are copied; if it takes too long, it ends and starts again.
  let switchMs = 0;
  for (let attempt = 1; ; attempt++) {
    const frozen = performance.now();
    const until = Date.now() + switchTimeoutMs;
    // No record: `from` is the space's home, where it was found.
    const inUse = (now: RouteRecord | undefined) => now === undefined || now.state === 'here';
    if (!(await swap(source, from, inUse, { state: 'moving', to, move, until })))
      throw new RouteError(
        `moveSpace: space ${JSON.stringify(space)} left store ${JSON.stringify(from)} while it was being moved: is another move of it running?`,
      );
    await progress('switching', rows);
    const endSwitch = () => swap(source, from, (now) => now?.state === 'moving' && now.move === move, { state: 'here' });
    const last = await catchUp(source, target, space, version, async (tx, at) => {
      await stillOurs(tx);
      await tx.put(keys.route, { state: 'incoming', from, move, complete: at });
    }).catch(async (error: unknown) => {
      // A failure, not a kill (another move took the target over, a store failed): the space
      // takes writes again now, not once the lease runs out, and a move that took over can switch.
      await endSwitch().catch(() => {});
      throw error;
    });
    version = last.version;
    rows += last.rows;
    // 4. The commit point: only if no write ended the switch (its lease ran out) meanwhile.
    const inTime = Date.now() < until - MARGIN_MS;
    if (inTime && (await swap(source, from, (now) => now?.state === 'moving' && now.move === move, { state: 'moved', to, move }))) {
      await progress('committed', rows);
      // 5. The target's copy is in use (a router that comes first does this itself).
      await swap(target, to, (now) => ours(now) && now?.state === 'incoming' && now.complete !== undefined, { state: 'here', from, move });
      switchMs = performance.now() - frozen;
      break;
    }
    await endSwitch();
    if (attempt >= SWITCH_ATTEMPTS)
      throw new RouteError(
        `moveSpace: the switch of space ${JSON.stringify(space)} did not finish within ${switchTimeoutMs} ms (options.switchTimeoutMs), ${SWITCH_ATTEMPTS} times; it stays in ${JSON.stringify(from)}`,
      );
  }
  await progress('switched', rows);
  await storage.settle(space, to);
  await forwardHome(storage, space, from, to, move);
  await cleanUpAfter(storage, space, to, (count) => progress('cleaning', count));
  return { from, to, moved: true, rows, switchMs, totalMs: performance.now() - started };
}

/**
 * The store holding `space`'s copy in use as `storage` finds it, checked against what the stores
 * hold first (src/route/survey.ts). A space no store holds is refused before anything is written
 * (a router's first look at a space writes its directory row).
 */
async function locateChecked(storage: Router, space: string): Promise<string> {
  const holdings = await surveySpace(storage.stores, space);
  if (!exists(holdings))
    throw new RouteError(
      `moveSpace: space ${JSON.stringify(space)} does not exist: no store (${Object.keys(storage.stores).join(', ')}) holds any row of it; nothing was moved or written. Is its name right? (the default space is '')`,
    );
  return locateWhereHeld(storage, space, 'moveSpace', holdings);
}

/** Throws unless the target's record is still this move's: another move took the space over. */
async function checkOurs(tx: StorageTransaction, keys: SpaceKeys, ours: (now: RouteRecord | undefined) => boolean, space: string, name: string): Promise<void> {
  if (!ours(routeRecordOf(await tx.get(keys.route), space, name)))
    throw new RouteError(`moveSpace: another move of space ${JSON.stringify(space)} took over its copy in ${JSON.stringify(name)}`);
}

/**
 * Once a space is in use in `at`: removes the rows a move left in its source (step 6), when its
 * record still names one, and then forgets the source.
 */
async function cleanUpAfter(storage: Router, space: string, at: string, removed?: (rows: number) => void | Promise<void>): Promise<void> {
  const keys = new SpaceKeys(space);
  const store = storage.stores[at]!;
  const now = await store.transaction(async (tx) => routeRecordOf(await tx.get(keys.route), space, at), { readOnly: true, space });
  if (now?.state !== 'here' || now.from === undefined) return;
  const source = storage.stores[now.from];
  // Only the rows of a copy a move left: its record says the space went (never a copy in use).
  const left = source && (await source.transaction(async (tx) => routeRecordOf(await tx.get(keys.route), space, now.from!), { readOnly: true, space }));
  if (source !== undefined && left?.state === 'moved') {
    let total = 0;
    await removeAll(source, space, (count) => removed?.((total += count)));
  }
  await store.transaction(
    async (tx) => {
      const still = routeRecordOf(await tx.get(keys.route), space, at);
      if (still?.state === 'here' && still.move === now.move) await tx.put(keys.route, { state: 'here' });
    },
    { readOnly: false, space },
  );
}

/**
 * Points the space's home at its new store, so that a process that knows nothing of it finds it
 * in one step, not along every store it was ever in. With a directory, `settle` did that.
 */
async function forwardHome(storage: Router, space: string, from: string, to: string, move: string): Promise<void> {
  const home = await storage.home(space);
  if (home === from || home === to) return;
  const keys = new SpaceKeys(space);
  await storage.stores[home]!.transaction(
    async (tx) => {
      const now = routeRecordOf(await tx.get(keys.route), space, home);
      if (now?.state === 'moved') await tx.put(keys.route, { state: 'moved', to, move });
    },
    { readOnly: false, space },
  );
}

/** Catch-up passes before the switch, at most: each copies what changed during the one before. */
const CATCH_UP_PASSES = 8;
/** Rows a catch-up may copy and still be the last before the switch: the switch copies about as many again. */
const SMALL = 2_000;
/** Tries of the switch before the move gives up. */
const SWITCH_ATTEMPTS = 3;
/** The commit point must come this long before the lease runs out, for clocks a little apart. */
const MARGIN_MS = 50;
