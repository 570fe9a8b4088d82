/**
 * Pulls from PostgreSQL streaming standbys (`postgresStorage`'s `standbys`), on a real primary and
 * standby on loopback (test/support/standby.ts): a standby serves pulls once it has replayed what
 * the primary had when they were asked for, and never otherwise. Replay is paused on the standby
 * (`pg_wal_replay_pause`) to make it lag on demand, and it is crashed and started again.
 */
import fc from 'fast-check';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JSONValue, SyncContext } from '../../src/index.js';
import { type PostgresStorage, postgresStorage } from '../../src/storage/postgres.js';
import { RUN } from '../../src/storage/standby-reads.js';
import { handlePull } from '../../src/index.js';
import { mutation, post, pull, pullBody, push, testContext } from '../support/helpers.js';
import { type StandbyPair, haveServerBinaries, startStandbyPair } from '../support/standby.js';
import { fastLoop } from '../support/stores.js';

const backoff = (retries: number) => Math.min(0.05 * 2 ** retries, 1);

describe.runIf(haveServerBinaries() && !fastLoop)('pulls from standbys', () => {
  let pair: StandbyPair;
  let primary: postgres.Sql;
  let standby: postgres.Sql;
  let storage: PostgresStorage;
  let ctx: SyncContext;
  // The same standby, waited for up to 10 s: where a test counts on it serving, a busy machine's
  // replication lag (async, on loopback) must not send a read to the primary.
  let patient: PostgresStorage;
  let patientCtx: SyncContext;
  // Each client group's mutation IDs so far, numbered across tests.
  const next = new Map<string, number>();

  beforeAll(async () => {
    pair = await startStandbyPair();
    primary = postgres(pair.primary.url, { max: 4, fetch_types: false, onnotice: () => {} });
    standby = postgres(pair.standby.url, { max: 4, fetch_types: false, onnotice: () => {}, connect_timeout: 2, backoff });
    storage = postgresStorage(primary, { standbys: [standby], standbyWaitMs: 50 });
    ctx = testContext({ storage });
    patient = postgresStorage(primary, { standbys: [standby], standbyWaitMs: 10_000 });
    patientCtx = testContext({ storage: patient });
    await storage.migrate();
    await pair.caughtUp();
  }, 120_000);

  afterAll(async () => {
    await primary?.end({ timeout: 1 });
    await standby?.end({ timeout: 1 });
    await pair?.stop();
  });

  const stats = () => storage.standbyStats()!;
  const patientStats = () => patient.standbyStats()!;
  const replay = (what: 'pause' | 'resume') => pair.query(pair.standby, `SELECT pg_wal_replay_${what}()`);
  /** Pushes `key = value` as the next mutation of group `group`'s client; resolves to its ID. */
  const put = async (group: string, key: string, value: JSONValue) => {
    const id = (next.get(group) ?? 0) + 1;
    next.set(group, id);
    await push(ctx, group, [mutation(`${group}-client`, id, 'put', { key, value })]);
    return id;
  };

  it('serves pulls from a standby that has caught up, and pushes from the primary', async () => {
    const id = await put('a', 'fresh', 1);
    const before = patientStats();
    for (let i = 0; i < 10; i++) {
      const answer = await pull(patientCtx, 'a', null);
      expect(answer.lastMutationIDChanges).toEqual({ 'a-client': id });
      expect(answer.patch).toContainEqual({ op: 'put', key: 'fresh', value: 1 });
    }
    const after = patientStats();
    // Asynchronous replication: a pull may wait a moment for the push's replay, but none should
    // have to fall back to the primary.
    expect(after.standby - before.standby).toBe(10);
    expect(after.primary - before.primary).toBe(0);
    expect(after.probes - before.probes).toBeGreaterThan(0);
  });

  it('reads the same from the standby as from the primary, in every kind of read', async () => {
    await put('a', 'another', 2);
    await pair.caughtUp();
    const alone = postgresStorage(primary);
    const one = [{ prefix: '', limit: 50 }];
    // More ranges than one statement takes: several statements in one snapshot.
    const many = Array.from({ length: 20 }, (_, n) => ({ prefix: '', limit: n + 1 }));
    const scan = (s: PostgresStorage) => s.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true });
    const before = patientStats().standby;
    expect(await patient.readMany!(one, {})).toEqual(await alone.readMany!(one, {}));
    expect(await patient.readMany!(many, {})).toEqual(await alone.readMany!(many, {}));
    expect(await scan(patient)).toEqual(await scan(alone));
    expect((await scan(patient)).length).toBeGreaterThan(3);
    expect(patientStats().standby - before).toBe(4);
  });

  it('answers from the primary when the standby lags: a client reads its own push at once', async () => {
    const { cookie } = await pull(ctx, 'b', null);
    await replay('pause');
    try {
      const before = stats();
      const id = await put('b', 'own write', 'seen');
      const answer = await pull(ctx, 'b', cookie);
      expect(answer.lastMutationIDChanges).toEqual({ 'b-client': id });
      expect(answer.patch).toEqual([{ op: 'put', key: 'own write', value: 'seen' }]);
      // A group that never pushed sees it too (a poked client does).
      expect((await pull(ctx, 'observer', null)).patch).toContainEqual({ op: 'put', key: 'own write', value: 'seen' });
      const after = stats();
      expect(after.primary - before.primary).toBeGreaterThanOrEqual(2);
      expect(after.waited - before.waited).toBeGreaterThanOrEqual(2);
      expect(after.standby - before.standby).toBe(0);
    } finally {
      await replay('resume');
    }
    await pair.caughtUp();
    const before = patientStats().standby;
    await pull(patientCtx, 'b', cookie);
    expect(patientStats().standby - before).toBe(1);
  });

  it('never shows a client its cookie or lastMutationIDs going back, nor misses its own push, whatever the standby lags (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ act: fc.constantFrom('push', 'pull'), group: fc.constantFrom('p', 'q') }),
            fc.record({ act: fc.constantFrom('pause', 'resume') }),
          ),
          { minLength: 5, maxLength: 25 },
        ),
        async (steps) => {
          // What each group has been told, and what it pushed.
          const seen = new Map<string, { order: number; lmid: number; cookie: JSONValue }>();
          const pushed = new Map<string, number>();
          try {
            for (const step of steps) {
              if (!('group' in step)) await replay(step.act);
              else if (step.act === 'push') pushed.set(step.group, await put(step.group, `${step.group}-last`, Math.random()));
              else {
                const last = seen.get(step.group);
                const answer = await pull(ctx, step.group, last?.cookie ?? null);
                const order = (answer.cookie as { order: number }).order;
                const lmid = answer.lastMutationIDChanges[`${step.group}-client`] ?? last?.lmid ?? 0;
                expect(order).toBeGreaterThanOrEqual(last?.order ?? 0);
                expect(lmid).toBeGreaterThanOrEqual(last?.lmid ?? 0);
                // Every push acknowledged before the pull is in it.
                expect(lmid).toBeGreaterThanOrEqual(pushed.get(step.group) ?? 0);
                seen.set(step.group, { order, lmid, cookie: answer.cookie });
              }
            }
          } finally {
            await replay('resume');
          }
        },
      ),
      { numRuns: 8 },
    );
    // Both kinds of answer were exercised.
    expect(stats().standby).toBeGreaterThan(0);
    expect(stats().primary).toBeGreaterThan(0);
  }, 120_000);

  it('goes on from the primary while the standby is down, and back to it once it is up', async () => {
    await pair.crashStandby();
    try {
      const id = await put('c', 'while down', true);
      const before = stats();
      for (let i = 0; i < 5; i++) expect((await pull(ctx, 'c', null)).lastMutationIDChanges).toEqual({ 'c-client': id });
      expect(stats().primary - before.primary).toBe(5);
    } finally {
      await pair.restartStandby();
    }
    await pair.caughtUp();
    // The standby is left alone for a second after a failure, then polled again.
    const deadline = Date.now() + 20_000;
    const before = stats().standby;
    while (stats().standby === before && Date.now() < deadline) {
      await pull(ctx, 'c', null);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(stats().standby).toBeGreaterThan(before);
  }, 60_000);

  it('under synchronous replication, a pull whose cookie the standby gave and the primary does not show yet waits for the primary rather than start the client over', async () => {
    const setQuorum = async (names: string) => {
      await pair.query(pair.primary, names === '' ? 'ALTER SYSTEM RESET synchronous_standby_names' : `ALTER SYSTEM SET synchronous_standby_names = '${names}'`);
      await pair.query(pair.primary, 'SELECT pg_reload_conf()');
    };
    const first = await put('s', 'k', 1);
    await pair.caughtUp();
    const { cookie: before } = await pull(patientCtx, 's', null);
    // Two acknowledgements that never come: a commit is on the standby, replayed, and waits on the primary.
    await setQuorum('ANY 2 (standby, nobody)');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const waiting = push(ctx, 's', [mutation('s-client', first + 1, 'put', { key: 'k', value: 2 })]);
    next.set('s', first + 1);
    let seen: Awaited<ReturnType<typeof pull>> | undefined;
    for (const deadline = Date.now() + 20_000; seen === undefined && Date.now() < deadline; ) {
      const pulled = await pull(patientCtx, 's', before);
      if (pulled.patch.length > 0) seen = pulled;
    }
    expect(seen?.patch).toEqual([{ op: 'put', key: 'k', value: 2 }]);
    expect(seen?.lastMutationIDChanges).toEqual({ 's-client': first + 1 });
    const patientMs = 15_000;
    const zero = testContext({ storage: postgresStorage(primary, { standbys: [standby], catchUpMs: 0 }) });
    const waits = postgresStorage(primary, { standbys: [standby], catchUpMs: patientMs });
    // The standby goes: the next pulls read the primary, which does not show the commit yet.
    await pair.crashStandby();
    try {
      // Without a wait, the client is told to start over.
      expect(await (await handlePull(post('/pull', pullBody('s', seen!.cookie)), zero)).json()).toEqual({ error: 'ClientStateNotFound' });
      const started = Date.now();
      const answer = handlePull(post('/pull', pullBody('s', seen!.cookie)), testContext({ storage: waits }));
      // Once that pull has read the primary twice (it has waited once), the quorum is lifted: the commit shows there.
      while (waits.standbyStats()!.primary < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      await setQuorum('');
      const body = await (await answer).json();
      expect(body).not.toHaveProperty('error');
      expect(body.patch).toEqual([]);
      expect(body.lastMutationIDChanges).toEqual({});
      expect(Date.now() - started).toBeLessThan(patientMs);
      expect((await waiting).status).toBe(200);
    } finally {
      await setQuorum('');
      await pair.restartStandby();
    }
    await pair.caughtUp();
  }, 90_000);

  it('tells a standby reinitialised after a crash of one of its processes from the run it was polled in, and goes on', async () => {
    const run = async () => ((await pair.query(pair.standby, RUN)) as [{ started: string }])[0].started;
    const before = await run();
    // A backend killed -9: the postmaster ends every other one and reinitialises, with the same
    // start time, reopening at its last restartpoint's consistent state.
    const victim = postgres(pair.standby.url, { max: 1, fetch_types: false, onnotice: () => {} });
    const [{ pid }] = (await victim.unsafe('SELECT pg_backend_pid() AS pid')) as unknown as [{ pid: number }];
    process.kill(pid, 'SIGKILL');
    await victim.end({ timeout: 1 }).catch(() => {});
    let after = before;
    for (const deadline = Date.now() + 30_000; after === before && Date.now() < deadline; ) {
      after = await run().catch(() => before);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(after).not.toBe(before);
    expect(after.split(' ')[0]).toBe(before.split(' ')[0]); // the same start time
    const id = await put('e', 'after reinit', 1);
    for (let i = 0; i < 5; i++) expect((await pull(ctx, 'e', null)).lastMutationIDChanges).toEqual({ 'e-client': id });
  }, 60_000);

  it('takes a pg pool as a standby too', async () => {
    const pool = new pg.Pool({ connectionString: pair.standby.url, max: 2 });
    pool.on('error', () => {});
    try {
      const pooled = postgresStorage(primary, { standbys: [pool], standbyWaitMs: 10_000 });
      const pooledCtx = testContext({ storage: pooled });
      const id = await put('d', 'pooled', 1);
      await pair.caughtUp();
      expect((await pull(pooledCtx, 'd', null)).lastMutationIDChanges).toEqual({ 'd-client': id });
      expect(pooled.standbyStats()).toMatchObject({ standby: 1, primary: 0 });
    } finally {
      await pool.end();
    }
  });

  it('refuses options that are not standbys', () => {
    expect(() => postgresStorage(primary, { standbys: standby as never })).toThrow(/standbys must be an array/);
    expect(() => postgresStorage(primary, { standbys: [standby], standbyWaitMs: -1 })).toThrow(/standbyWaitMs must be a number/);
    for (const catchUpMs of [-1, Infinity, NaN])
      expect(() => postgresStorage(primary, { standbys: [standby], catchUpMs })).toThrow(/catchUpMs must be a number of milliseconds from 0 to 60,000/);
    expect(postgresStorage(primary).standbyStats()).toBeUndefined();
    // Without standbys every read is the primary's, which shows each commit once it returns: no wait.
    expect(postgresStorage(primary).catchUpMs).toBeUndefined();
    expect(postgresStorage(primary, { standbys: [standby] }).catchUpMs).toBe(1_000);
  });
});
