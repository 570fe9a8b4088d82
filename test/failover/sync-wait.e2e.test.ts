/**
 * A push whose COMMIT waits for the synchronous standby longer than `lostAfterMs` is answered 503,
 * and its backend is left waiting: ended (`pg_terminate_backend`), PostgreSQL would make the
 * commit visible on the primary though the standby never got it, so a half-dead primary failed
 * over would have shown clients a commit the new primary lacks. On a real primary and
 * synchronous standby (test/support/standby.ts), replication held by its fault proxy.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, handlePush, type SyncContext } from '../../src/index.js';
import { postgresStorage } from '../../src/postgres.js';
import { mutation, post, pushBody } from '../support/helpers.js';
import { haveServerBinaries, type StandbyPair, startStandbyPair } from '../support/standby.js';
import { fastLoop } from '../support/stores.js';
import { countingMutators, pullOnce, sleep } from './load.js';

describe.runIf(haveServerBinaries() && !fastLoop)('a COMMIT waiting for its synchronous standby', () => {
  let pair: StandbyPair;
  let sql: postgres.Sql;
  let ctx: SyncContext;

  beforeAll(async () => {
    pair = await startStandbyPair({ synchronous: true });
    sql = postgres(pair.primary.url, { max: 4, fetch_types: false, onnotice: () => {} });
    const storage = postgresStorage(sql, { lostAfterMs: 1_000 });
    await storage.migrate();
    // The 503's cause is the test's own doing: not logged.
    ctx = createContext({ storage, mutators: countingMutators, onError: () => {} });
  }, 120_000);

  afterAll(async () => {
    pair?.resumeReplication();
    await sql?.end({ timeout: 1 });
    await pair?.stop();
  });

  const waiting = async () => Number((await pair.query(pair.primary, "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'"))[0]!.n);
  const seen = async (key: string) => {
    const answer = await pullOnce(ctx, { groupID: `reader-${Math.random()}`, cookie: null });
    return 'patch' in answer && answer.patch.some((op) => op.op === 'put' && op.key === key);
  };

  it('is answered 503 and left waiting, unseen by readers of the primary, until the standby confirms it', async () => {
    pair.stallReplication();
    const response = await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'add', null)])), ctx);
    expect(response.status).toBe(503);
    // Past the moment the store would have ended it (at lostAfterMs, just before the 503).
    await sleep(1_500);
    expect(await waiting()).toBe(1);
    expect(await seen('m/c/1')).toBe(false);
    pair.resumeReplication();
    for (const deadline = Date.now() + 30_000; !(await seen('m/c/1')); await sleep(50)) {
      if (Date.now() > deadline) throw new Error('The commit did not show once replication went on');
    }
    expect(await waiting()).toBe(0);
  }, 60_000);
});
