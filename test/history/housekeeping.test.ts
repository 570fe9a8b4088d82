/**
 * Checkpoints built by housekeeping itself, at its own pace (one due every 1,000 versions):
 * on the stores in process only, since a thousand commits is slow on PostgreSQL; the suite
 * (suite.ts) checks checkpoints on every store with the step due sooner.
 */
import { describe, expect, it } from 'vitest';
import { collectGarbage, memoryStorage, type Storage } from '../../src/index.js';
import { CHECKPOINT_EVERY } from '../../src/sync/history/checkpoints.js';
import { countHistory } from '../../src/sync/version/history.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { checkpointsOf, historyContext, metaOf, Recorder, stateAt } from './suite.js';

for (const [name, create] of [['memoryStorage', () => memoryStorage()], ['sqliteStorage', () => sqliteStorage(openSQLite())]] as Array<[string, () => Storage]>) {
  describe(`checkpoints by housekeeping: ${name}`, () => {
    it('housekeeping builds a checkpoint once 1,000 versions passed, counts it in the history, and at() reads from it', async () => {
      const { ctx } = historyContext(create());
      const space = 'gc';
      const r = new Recorder(ctx, space);
      for (let i = 1; i < CHECKPOINT_EVERY; i++) await r.modelled({ [`k${i % 7}`]: i, ...(i % 10 === 0 && { [`k${(i + 3) % 7}`]: undefined }) });
      await collectGarbage(ctx, space);
      expect(await checkpointsOf(ctx, space)).toEqual([]);
      await r.modelled({ last: true });
      await collectGarbage(ctx, space);
      expect(await checkpointsOf(ctx, space)).toEqual([CHECKPOINT_EVERY]);
      for (let i = 0; i < 20; i++) await r.modelled({ [`k${i % 7}`]: `after ${i}` });
      for (const version of [0, 1, 500, CHECKPOINT_EVERY - 1, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1, CHECKPOINT_EVERY + 20]) expect(await stateAt(ctx, space, version), `version ${version}`).toEqual(r.at(version));
      const recount = await ctx.storage.transaction((tx) => countHistory(tx, new SpaceKeys(space)), { readOnly: true, space });
      expect((await metaOf(ctx, space))!.history).toBe(recount);
    });
  });
}
