/**
 * Erasure (`eraseData`): what it takes out of the live data, the log, checkpoints, the feed and
 * rejected mutations, what it leaves (each change's place, key and origin), and the history
 * bytes it frees.
 */
import { describe, expect, it } from 'vitest';
import { at, collectGarbage, eraseData, ERASED_TOPIC, exportSpace, inspect, readChanges, readHistory, restoreSpace, revertChanges } from '../../src/index.js';
import { countHistory } from '../../src/sync/version/history.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { mutation, push, testContext } from '../support/helpers.js';

const asUser = (user: string) => ({ 'x-user': user });
const context = () => testContext({ changes: {}, history: { checkpointEvery: 1 }, authenticate: (request) => request.headers.get('x-user') });

describe('erasure', () => {
  it("reaches a user's value that a restore wrote back: a copy of their value is theirs", async () => {
    const ctx = context();
    await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'a', value: 'secret-of-u1' })], asUser('u1'));
    await push(ctx, 'g2', [mutation('c2', 1, 'put', { key: 'a', value: 'u2-value' })], asUser('u2'));
    await restoreSpace(ctx, '', { to: 1 });
    expect((await at(ctx, '', 3)).entries).toEqual([['a', 'secret-of-u1']]);
    const result = await eraseData(ctx, '', { userID: 'u1' });
    expect(result.deleted).toEqual(['a']);
    const feed = JSON.stringify((await readChanges(ctx, '')).changes);
    expect(feed).not.toContain('secret-of-u1');
    expect(feed).toContain('u2-value');
  });
});
