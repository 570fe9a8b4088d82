/**
 * A data migration while its space moves between the stores of a routed storage: the progress
 * record moves with the space's rows, batches that come during the switch wait and land in the
 * target, and every entry is done once, whether the run goes on through the move or is stopped
 * during it and run again after.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../src/index.js';
import { migrationStatus, moveSpace, runMigration } from '../../src/ops.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { countOnce, entriesOf, itemKey, migrationContext, seed } from '../backend/migrations-suite.js';
import { mutation } from '../support/helpers.js';
import { pushTo } from './support.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a migration while its space moves', () => {
  it('runs through a move: batches during the switch wait and go to the target, each entry done once, the record in the target', async () => {
    const stores = { x: memoryStorage(), y: memoryStorage() };
    const ctx = migrationContext(routedStorage({ stores, place: () => 'x' }));
    await seed(ctx, 's', 300);
    let move: Promise<unknown> | undefined;
    const phases: string[] = [];
    let pushes = 0;
    const result = await runMigration(ctx, countOnce, {
      batch: 5,
      onProgress: async ({ entries }) => {
        // Pushes go on meanwhile, to keys outside the migration's prefix.
        const response = await pushTo(ctx, 's', 'g', [mutation('c', ++pushes, 'put', { key: `note/${pushes}`, value: pushes })]);
        expect(response.status).toBe(200);
        move ??= moveSpace(ctx, 's', 'y', {
          // The switch is held long enough for batches to come while the space's writes wait.
          onProgress: async ({ phase }) => {
            phases.push(phase);
            if (phase === 'switching') await sleep(30);
          },
        });
        if (entries < 300) await sleep(1);
      },
    });
    await move;
    expect(phases).toContain('committed');
    expect(result.entries).toBe(300);
    const entries = await entriesOf(ctx, 's');
    for (let i = 0; i < 300; i++) expect(entries.get(itemKey(i)), itemKey(i)).toEqual({ n: i, m: 1 });
    expect([...entries.keys()].filter((key) => key.startsWith('note/'))).toHaveLength(pushes);
    const record = new SpaceKeys('s').migration('count-once');
    expect(await stores.y.transaction((tx) => tx.get(record), { readOnly: true, space: 's' })).toMatchObject({ entries: 300 });
    expect(await stores.x.transaction((tx) => tx.get(record), { readOnly: true, space: 's' })).toBeUndefined();
    expect(await runMigration(ctx, countOnce)).toMatchObject({ skipped: 1, entries: 0 });
  });

  it('stopped during the move and run again after it: it goes on from the record the move copied, each entry done once', async () => {
    const stores = { x: memoryStorage(), y: memoryStorage() };
    const ctx = migrationContext(routedStorage({ stores, place: () => 'x' }));
    await seed(ctx, 's', 200);
    const stop = new AbortController();
    let move: Promise<unknown> | undefined;
    await expect(
      runMigration(ctx, countOnce, {
        batch: 7,
        signal: stop.signal,
        onProgress: async () => {
          move ??= moveSpace(ctx, 's', 'y', { onProgress: async ({ phase }) => void (phase === 'copying' && (await sleep(5))) });
          await sleep(1);
          if ((await migrationStatus(ctx, 'count-once'))[0]!.entries >= 70) stop.abort(new Error('stopped'));
        },
      }),
    ).rejects.toThrow('stopped');
    await move;
    const [status] = await migrationStatus(ctx, 'count-once');
    expect(status).toMatchObject({ state: 'started' });
    await runMigration(ctx, countOnce, { batch: 7 });
    const entries = await entriesOf(ctx, 's');
    for (let i = 0; i < 200; i++) expect(entries.get(itemKey(i)), itemKey(i)).toEqual({ n: i, m: 1 });
  });
});
