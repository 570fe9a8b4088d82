/**
 * A space's history moves with it: at() and readHistory give the same answers in its new store,
 * checkpoints included, and an erasure or a restore made while the move copies reaches the copy
 * (an erasure rewrites log rows older than the version a catch-up copies from).
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { eraseData, readHistory, restoreSpace } from '../../src/backend.js';
import { moveSpace, type MoveProgress } from '../../src/ops.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { buildCheckpoint, checkpointsOf, historyContext, metaOf, Recorder, stateAt } from '../history/suite.js';

const space = 's';

function routed() {
  const members = { x: memoryStorage(), y: memoryStorage() };
  return { members, ...historyContext(routedStorage({ stores: members, place: () => 'x' })) };
}

/** A history of a dozen versions by two users, with a checkpoint at version 6. */
async function written(ctx: SyncContext): Promise<Recorder> {
  const r = new Recorder(ctx, space);
  for (let i = 0; i < 6; i++) await r.modelled({ [`k${i % 3}`]: `v${i}`, ...(i === 2 && { secret: 'SECRET-1' }) }, i % 2 === 0 ? 'ann' : 'mallory');
  await buildCheckpoint(ctx, space);
  expect(await checkpointsOf(ctx, space)).toEqual([6]);
  for (let i = 6; i < 12; i++) await r.modelled({ [`k${i % 4}`]: `v${i}`, ...(i === 8 && { secret: 'SECRET-2' }) }, i % 2 === 0 ? 'ann' : 'mallory');
  return r;
}

/** Every answer history gives of the space: the state at each version, and every change. */
async function answers(ctx: SyncContext) {
  const version = (await metaOf(ctx, space))!.version;
  const states = [];
  for (let v = 0; v <= version; v++) states.push(await stateAt(ctx, space, v));
  return { states, changes: await readHistory(ctx, space) };
}

/** The text of every row the store holds of the space. */
async function rowsText(store: Storage): Promise<string> {
  return JSON.stringify(await store.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true }));
}

/** Moves the space to `y`, running `meanwhile` once, after the copy, before the last catch-up. */
async function moveWith(ctx: SyncContext, meanwhile: () => Promise<unknown>): Promise<void> {
  let done = false;
  const onProgress = async ({ phase }: MoveProgress) => {
    if (phase === 'catching-up' && !done) await ((done = true), meanwhile());
  };
  await moveSpace(ctx, space, 'y', { onProgress });
  expect(done).toBe(true);
}

describe('moving a space keeps its history', () => {
  it('at() at every version and readHistory answer the same in the new store, from the checkpoint it copied', async () => {
    const { ctx, members } = routed();
    const r = await written(ctx);
    const before = await answers(ctx);
    for (let v = 0; v < before.states.length; v++) expect(before.states[v]).toEqual(r.at(v));
    await moveSpace(ctx, space, 'y');
    expect(await rowsText(members.x)).not.toContain('"f/');
    const keys = new SpaceKeys(space);
    expect((await members.y.transaction((tx) => tx.scan({ prefix: keys.checkpointPrefix }), { readOnly: true })).length).toBeGreaterThan(0);
    expect(await answers(ctx)).toEqual(before);
  });

  it('an erasure made while the move catches up reaches the new store: no erased value is left in its rows or its history', async () => {
    const { ctx, members } = routed();
    await written(ctx);
    await moveWith(ctx, () => eraseData(ctx, space, { key: 'secret' }));
    expect(await rowsText(members.y)).not.toContain('SECRET');
    const { states, changes } = await answers(ctx);
    expect(JSON.stringify({ states, changes })).not.toContain('SECRET');
    expect(changes.changes.filter(({ key }) => key === 'secret').map(({ erased }) => erased)).toEqual(['after', 'both', 'before']);
  });

  it('an erasure of a user made while the move catches up reaches the new store too', async () => {
    const { ctx, members } = routed();
    await written(ctx);
    await moveWith(ctx, () => eraseData(ctx, space, { userID: 'mallory' }));
    const after = await answers(ctx);
    const { ctx: direct } = historyContext(members.y);
    // Read from the store itself, not through the router: what the copy holds.
    expect(await answers(direct)).toEqual(after);
    const theirs = after.changes.changes.filter(({ by }) => 'userID' in by && by.userID === 'mallory');
    expect(theirs.length).toBeGreaterThan(0);
    // The values they set are gone; a value before theirs was another's, and stays.
    for (const change of theirs) expect(change.after).toBeUndefined();
  });

  it('a restore made while the move catches up is in the new store: the space and its history as in the old', async () => {
    const { ctx } = routed();
    const r = await written(ctx);
    let restored!: Awaited<ReturnType<typeof restoreSpace>>;
    await moveWith(ctx, async () => (restored = await restoreSpace(ctx, space, { to: 4 })));
    expect(restored.version).toBe(13);
    const { states } = await answers(ctx);
    expect(states.slice(0, 13)).toEqual(Array.from({ length: 13 }, (_, v) => r.at(v)));
    expect(states[13]).toEqual(r.at(4));
  });
});
