/**
 * Erasure (`eraseData`): what it takes out of the live data, the log, checkpoints, the feed,
 * webhook replays and rejected mutations; what it leaves (each change's place, key and origin);
 * the event it tells receivers by; the history bytes it frees; the targets it refuses.
 */
import { describe, expect, it } from 'vitest';
import { createContext, handlePush, memoryStorage, type SchemaOptions } from '../../src/index.js';
import { at, eraseData, ERASED_TOPIC, readChanges, readHistory, restoreSpace, transact } from '../../src/backend.js';
import { collectGarbage, exportSpace, inspect } from '../../src/ops.js';
import { countHistory } from '../../src/sync/history/history-bytes.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { mutation, post, push, pushBody, testContext } from '../support/helpers.js';

const asUser = (user: string) => ({ 'x-user': user });
const context = () => testContext({ changes: {}, history: { checkpointEvery: 1 }, authenticate: (request) => request.headers.get('x-user') });

/** Everything a read path gives of the space: the feed, history, reads as of every version, an export. */
async function everything(ctx: ReturnType<typeof context>): Promise<string> {
  const { changes, version } = await readChanges(ctx, '', { limit: 10_000 });
  const asOf = [];
  for (let v = 0; v <= version; v++) asOf.push((await at(ctx, '', v)).entries);
  return JSON.stringify([changes, (await readHistory(ctx, '', { limit: 10_000 })).changes, asOf]) + (await new Response(exportSpace(ctx, '')).text());
}

describe('erasure', () => {
  it("of a key takes its values out of the live data, the log, checkpoints and every read, keeping each change's place", async () => {
    const ctx = context();
    await transact(ctx, '', async (tx) => (await tx.set('user/ann/email', 'ann@example.com'), await tx.set('other', 'keep me')));
    await transact(ctx, '', (tx) => tx.set('user/ann/email', 'ann@new.example.com'));
    await collectGarbage(ctx, '');
    expect((await inspect(ctx, '')).changes?.checkpoints.length).toBeGreaterThan(0);
    const result = await eraseData(ctx, '', { key: 'user/ann/email' });
    expect(result).toMatchObject({ version: 3, deleted: ['user/ann/email'], historyRows: 3 });
    expect(result.checkpointRows).toBeGreaterThan(0);
    const all = await everything(ctx);
    expect(all).not.toContain('example.com');
    expect(all).toContain('keep me');
    const feed = (await readChanges(ctx, '')).changes;
    expect(
      feed.map((change) => [change.version, change.op, 'key' in change ? change.key : change.topic, 'erased' in change ? change.erased : undefined]),
    ).toEqual([
      [1, 'erased', 'user/ann/email', 'after'],
      [1, 'set', 'other', undefined],
      [2, 'erased', 'user/ann/email', 'both'],
      [3, 'erased', 'user/ann/email', 'before'],
      [3, 'event', ERASED_TOPIC, undefined],
    ]);
    expect(feed.at(-1)).toMatchObject({ op: 'event', payload: { key: 'user/ann/email' }, by: { kind: 'erase' } });
    expect(feed.find((change) => change.op === 'erased')).toMatchObject({ was: 'set', by: { kind: 'backend' } });
    // A new value after the erasure is the key's again.
    await transact(ctx, '', (tx) => tx.set('user/ann/email', 'fresh'));
    expect((await at(ctx, '', 4)).entries).toContainEqual(['user/ann/email', 'fresh']);
  });

  it('of a prefix reaches every key under it, and frees the history bytes it took (the counter equals a recount)', async () => {
    const ctx = context();
    await transact(ctx, '', async (tx) => (await tx.set('doc/1/a', 'x'.repeat(500)), await tx.set('doc/1/b', 'y'.repeat(500)), await tx.set('doc/2/a', 'z')));
    const keys = new SpaceKeys('');
    const before = (await inspect(ctx, '')).history;
    await eraseData(ctx, '', { prefix: 'doc/1/' });
    const after = await inspect(ctx, '');
    // The values' 1,000 bytes go; the erasure's own rows (two deletes, their tombstones, its event) come.
    expect(after.history).toBeLessThan(before);
    expect(after.history).toBe(await ctx.storage.transaction((tx) => countHistory(tx, keys), { readOnly: true }));
    expect(await everything(ctx)).not.toMatch(/xxx|yyy/);
    expect((await at(ctx, '', 1)).entries).toEqual([['doc/2/a', 'z']]);
  });

  it("of a user reaches what they wrote and the values that followed from it, leaves others' values, and empties their events and rejected mutations' args", async () => {
    const schema: SchemaOptions = { current: '2', older: [{ version: '1', mutators: { legacy: null } }] };
    const ctx = Object.assign(
      createContext({
        storage: memoryStorage(),
        mutators: { put: async (tx, { key, value }: { key: string; value: string }) => void (await tx.set(key, value)) },
        schema,
        changes: {},
        authenticate: (request) => request.headers.get('x-user'),
        onError: () => {},
      }),
      {},
    );
    const pushAs = async (user: string, group: string, schemaVersion: string, mutations: ReturnType<typeof mutation>[]) =>
      expect((await handlePush(post('/push', pushBody(group, mutations, { schemaVersion }), asUser(user)), ctx)).status).toBe(200);
    await pushAs('ann', 'ga', '2', [mutation('ca', 1, 'put', { key: 'a', value: 'ann-secret' }), mutation('ca', 2, 'put', { key: 'b', value: 'ann-b' })]);
    await pushAs('bob', 'gb', '2', [mutation('cb', 1, 'put', { key: 'b', value: 'bob-b' })]);
    await pushAs('ann', 'ga', '1', [mutation('ca', 3, 'legacy', { note: 'ann-legacy-args' })]);
    expect(JSON.stringify(await inspect(ctx, ''))).toContain('ann-legacy-args');
    const result = await eraseData(ctx, '', { userID: 'ann' });
    expect(result).toMatchObject({ deleted: ['a'], rejected: 1 });
    const text = JSON.stringify([(await readChanges(ctx, '')).changes, await inspect(ctx, ''), (await at(ctx, '', 1)).entries, (await at(ctx, '', 2)).entries]);
    expect(text).not.toMatch(/ann-secret|ann-b|ann-legacy-args/);
    expect(text).toContain('bob-b');
    // Bob's change keeps its value after; its value before was Ann's, and is gone.
    const bobs = (await readHistory(ctx, '', { key: 'b' })).changes[1]!;
    expect(bobs).toMatchObject({ after: 'bob-b', erased: 'before' });
    expect(bobs.before).toBeUndefined();
  });

  it('reaches what a webhook replay would send again', async () => {
    const ctx = context();
    await transact(ctx, '', (tx) => tx.set('k', 'secret'));
    await eraseData(ctx, '', { key: 'k' });
    // A replay resends what the log holds from the cursors given: the feed read from the start.
    expect(JSON.stringify((await readChanges(ctx, '', { after: '0' })).changes)).not.toContain('secret');
  });

  it("reaches a user's value that a restore wrote back: a copy of their value is theirs", async () => {
    const ctx = context();
    await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'a', value: 'secret-of-u1' })], asUser('u1'));
    await push(ctx, 'g2', [mutation('c2', 1, 'put', { key: 'a', value: 'u2-value' })], asUser('u2'));
    await restoreSpace(ctx, '', { to: 1 });
    expect((await at(ctx, '', 3)).entries).toEqual([['a', 'secret-of-u1']]);
    expect((await eraseData(ctx, '', { userID: 'u1' })).deleted).toEqual(['a']);
    const all = await everything(ctx);
    expect(all).not.toContain('secret-of-u1');
    expect(all).toContain('u2-value');
  });

  it('works with the change log off: the live data goes, and there is no history to reach', async () => {
    const ctx = testContext();
    await transact(ctx, '', (tx) => tx.set('k', 'v'));
    expect(await eraseData(ctx, '', { key: 'k' })).toMatchObject({ deleted: ['k'], historyRows: 0 });
    expect(await transact(ctx, '', (tx) => tx.get('k'))).toBeUndefined();
  });

  it('refuses a target that is not exactly one key, prefix or user, or the whole space', async () => {
    const ctx = context();
    for (const target of [{}, { key: 'a', prefix: 'b' }, { key: 1 }, { user: 'x' }, null, { prefix: '' }]) {
      await expect(eraseData(ctx, '', target as never)).rejects.toThrow(TypeError);
    }
  });
});
