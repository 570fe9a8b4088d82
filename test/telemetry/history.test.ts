import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eraseData, restoreSpace, revertChanges, transact } from '../../src/backend.js';
import { testContext } from '../support/helpers.js';
import { registerSdk, type TestSdk } from './sdk.js';

// Restores, reverts and erasures, as telemetry counts them: each operation, and the keys it changed.

let sdk: TestSdk;
beforeEach(() => {
  sdk = registerSdk();
});
afterEach(() => sdk.stop());

async function counted(name: string): Promise<Record<string, number>> {
  const points = await sdk.points(name);
  return Object.fromEntries(
    points.map(({ attributes, value }) => [`${String(attributes['viewsync.operation'])}${attributes['viewsync.dry_run'] === true ? ' (dry run)' : ''}`, value]),
  );
}

describe('history operations', () => {
  it('counts each restore, revert and erasure by operation and dry_run, and the keys each changed', async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await transact(
      ctx,
      's',
      async (tx) => {
        await tx.set('a', 2);
        await tx.set('b', 2);
      },
      { userID: 'mallory' },
    );
    expect((await restoreSpace(ctx, 's', { to: 1, dryRun: true })).changes).toHaveLength(2);
    expect((await restoreSpace(ctx, 's', { to: 1 })).changes).toHaveLength(2);
    expect((await revertChanges(ctx, 's', { versions: [3, 3] })).changes).toHaveLength(2);
    expect((await eraseData(ctx, 's', { key: 'b' })).deleted).toEqual(['b']);
    expect(await counted('viewsync.history.operations')).toEqual({ 'restore (dry run)': 1, restore: 1, revert: 1, erase: 1 });
    expect(await counted('viewsync.history.changes')).toEqual({ 'restore (dry run)': 2, restore: 2, revert: 2, erase: 1 });
  });
});
