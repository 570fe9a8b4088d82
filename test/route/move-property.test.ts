/**
 * A property of moves: whatever the pushes, wherever a move starts among them, and wherever it is
 * stopped (then run again), the moved space ends as the same pushes leave a space that never
 * moved: the same entries, the same lastMutationIDs, and a client holding a cookie from before
 * the move gets, from its cookie, exactly the changes since, and a reader of the change feed from
 * a cursor of before the move gets the same changes as from the space that never moved.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { type FeedChange, readChanges } from '../../src/backend.js';
import { moveSpace, type MoveProgress } from '../../src/ops.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import type { JSONValue } from '../../src/protocol/json.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { applyPatch, mutation } from '../support/helpers.js';
import { fastLoop } from '../support/stores.js';
import { pullFrom, pushTo, spaceContext } from './support.js';

const RUNS = fastLoop ? 15 : 60;
const PHASES = [undefined, 'copying', 'catching-up', 'switching', 'committed', 'switched', 'cleaning'] as const;

const op = fc.record({
  group: fc.integer({ min: 0, max: 2 }),
  name: fc.constantFrom('put', 'del', 'increment'),
  key: fc.constantFrom('a', 'b', 'doc/1/x', 'doc/2/y'),
  value: fc.integer({ min: 0, max: 9 }),
});

async function full(
  ctx: SyncContext,
  group: string,
  cookie: JSONValue = null,
): Promise<{ cookie: JSONValue; lmids: Record<string, number>; patch: Parameters<typeof applyPatch>[1] }> {
  const response = await pullFrom(ctx, 's', group, cookie);
  expect(response.status, await response.clone().text()).toBe(200);
  const body = (await response.json()) as { cookie: JSONValue; lastMutationIDChanges: Record<string, number>; patch: Parameters<typeof applyPatch>[1] };
  return { cookie: body.cookie, lmids: body.lastMutationIDChanges, patch: body.patch };
}

/** The keys of the space's entries and of their version, tombstone and prefix indexes. */
async function versionedRows(storage: Storage): Promise<string[]> {
  const { versioned } = new SpaceKeys('s').rowPrefixes;
  const keys: string[] = [];
  for (const prefix of versioned) keys.push(...(await storage.transaction((tx) => tx.scan({ prefix }), { readOnly: true, space: 's' })).map(([key]) => key));
  return keys;
}

/** The changes of space `s` after `after`, without when they were made (each store's clock). */
async function feed(ctx: SyncContext, after: string): Promise<unknown[]> {
  const changes: FeedChange[] = [];
  for (let more = true; more; ) {
    const page = await readChanges(ctx, 's', { after, limit: 3 });
    changes.push(...page.changes);
    ({ cursor: after, more } = page);
  }
  return changes.map(({ at: _, ...change }) => change);
}

describe('moveSpace, as a property', () => {
  it('leaves the space as if it had never moved, wherever the move starts and stops', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 30 }), fc.nat(), fc.constantFrom(...PHASES), async (ops, at, stopAt) => {
        const members = { x: memoryStorage(), y: memoryStorage() };
        const routed = spaceContext(routedStorage({ stores: members, place: () => 'x' }), { changes: {} });
        const alone = spaceContext(memoryStorage(), { changes: {} });
        const next = [0, 0, 0];
        const apply = async (step: (typeof ops)[number]) => {
          const id = ++next[step.group]!;
          const args = step.name === 'increment' ? { key: step.key, delta: step.value } : { key: step.key, value: step.value };
          for (const ctx of [routed, alone])
            expect((await pushTo(ctx, 's', `g${step.group}`, [mutation(`c${step.group}`, id, step.name, args)])).status).toBe(200);
        };
        // At least one push before the move: a move of a space no store holds is refused (move-refusals.test.ts).
        const split = 1 + (at % ops.length);
        for (const step of ops.slice(0, split)) await apply(step);
        const before = await full(routed, 'watcher');
        const midway = (await readChanges(routed, 's', { limit: 1 })).cursor;
        const stop = (progress: MoveProgress) => {
          if (progress.phase === stopAt) throw new Error('stopped');
        };
        // The rest of the pushes run while the move does (and while a stopped one is run again).
        const moving = moveSpace(routed, 's', 'y', { onProgress: stop, switchTimeoutMs: 150 })
          .catch((error: Error) => (error.message === 'stopped' ? undefined : Promise.reject(error)))
          .then(() => moveSpace(routed, 's', 'y'));
        for (const step of ops.slice(split)) await apply(step);
        expect(await moving).toMatchObject({ to: 'y' });

        const [moved, stayed] = [await full(routed, 'reader'), await full(alone, 'reader')];
        expect(applyPatch(new Map(), moved.patch)).toEqual(applyPatch(new Map(), stayed.patch));
        for (const group of [0, 1, 2]) expect((await full(routed, `g${group}`)).lmids).toEqual((await full(alone, `g${group}`)).lmids);
        // Row for row: the same versions and the same index rows (none left over from a catch-up).
        expect(await versionedRows(members.y)).toEqual(await versionedRows(alone.storage));
        const since = await full(routed, 'watcher', before.cookie);
        expect(since.patch.some(({ op: kind }) => kind === 'clear')).toBe(false);
        expect(applyPatch(applyPatch(new Map(), before.patch), since.patch)).toEqual(applyPatch(new Map(), stayed.patch));
        // The change feed went with it: read from a cursor of before the move, nothing lost, nothing twice.
        expect(await feed(routed, midway)).toEqual(await feed(alone, midway));
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
