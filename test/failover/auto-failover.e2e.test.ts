/**
 * Failover under an HA manager: a pg_auto_failover formation (test/support/auto-failover.ts: a
 * monitor, a primary and a synchronous secondary, tuned as docs/production.md shows), the app on
 * postgres.js with both nodes in its URL and `target_session_attrs=primary`, pushes and pulls
 * running throughout (load.ts). The primary is killed (SIGKILL to its keeper, PostgreSQL and
 * backends: the machine gone), then frozen (SIGSTOP: connections taken by the kernel and never
 * answered, as across a partition; the monitor fails it over, and it rejoins once it runs
 * again), then half-dead (its keeper and postmaster frozen: no new connection is answered and the
 * monitor fails it over, but the backends already connected go on taking statements, and would
 * commit were replication not synchronous), and the secondary is frozen (the primary still takes connections but its commits hang,
 * waiting for a synchronous standby that never answers, until the monitor lets it go on alone).
 * Each time: nothing acknowledged lost or applied twice, no cookie or lastMutationID backwards, no
 * answer but 200 and 503, pushes acknowledged again once the new primary is up, and (but for the
 * half-dead primary) no client group told ClientStateNotFound. How long that takes is the benchmark's
 * (bench/failover.ts), not timed here.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, type SyncContext } from '../../src/index.js';
import { postgresStorage } from '../../src/postgres.js';
import { type Formation, haveAutoFailover, startFormation } from '../support/auto-failover.js';
import { fastLoop } from '../support/stores.js';
import { countingMutators, type Load, pullOnce, sleep, startLoad } from './load.js';

describe.runIf(haveAutoFailover() && !fastLoop)('under pg_auto_failover', () => {
  let formation: Formation;
  let sql: postgres.Sql;
  let ctx: SyncContext;
  let runs = 0;

  beforeAll(async () => {
    formation = await startFormation();
    sql = postgres(formation.url, {
      max: 6,
      fetch_types: false,
      onnotice: () => {},
      connect_timeout: 2,
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
    });
    // A frozen primary answers nothing: a statement unanswered for 3 s is a lost connection (503).
    const storage = postgresStorage(sql, { lostAfterMs: 3_000 });
    await storage.migrate();
    ctx = createContext({ storage, mutators: countingMutators });
  }, 180_000);

  afterAll(async () => {
    await sql?.end({ timeout: 1 });
    await formation?.stop();
  });

  /**
   * Runs the load through `fault`, until pushes sent after it are acknowledged again; then checks
   * what was acknowledged. `resets`: client groups may be told ClientStateNotFound.
   */
  const through = async (fault: () => Promise<void>, heal: () => Promise<void>, { resets = false } = {}) => {
    const load = startLoad(ctx, { writers: 3, observers: 1, prefix: `run${++runs}-` });
    let stopped = false;
    try {
      await until(() => load.stats.push.get(200)! > 10, 'pushes acknowledged before the fault');
      await fault();
      load.mark();
      await until(() => load.stats.pushesAfterMark >= 10, `pushes acknowledged after the fault\n${formation.state()}`);
      await load.stop();
      stopped = true;
    } finally {
      if (!stopped) await load.stop();
      await heal();
    }
    await checkAcknowledged(load, resets);
    return load;
  };

  const checkAcknowledged = async (load: Load, resets: boolean) => {
    expect(load.stats.failures).toEqual([]);
    expect([...load.stats.push.keys(), ...load.stats.pull.keys()].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    const answer = await pullOnce(ctx, { groupID: `check-${Math.random()}`, cookie: null });
    if ('error' in answer) throw new Error(answer.error);
    const keys = new Map(answer.patch.flatMap((op) => (op.op === 'put' ? [[op.key, op.value] as const] : [])));
    // Synchronous replication: no client was shown a commit the new primary lacks, so none went
    // backwards and none was told ClientStateNotFound (started again as a new group).
    expect(load.groups.flatMap((group) => group.generations.flatMap((life) => life.backwards))).toEqual([]);
    if (!resets) expect(load.groups.filter((group) => group.generations.length > 1).map((group) => group.name)).toEqual([]);
    for (const group of load.groups.filter((group) => group.writes)) {
      for (const life of group.generations) {
        const client = life.clientID!;
        // Every acknowledged mutation's record is there; the counter counts each once.
        const missing = Array.from({ length: life.acknowledged }, (_, i) => i + 1).filter((id) => !keys.has(`m/${client}/${id}`));
        expect(missing, `${client}'s acknowledged mutations lost`).toEqual([]);
        const applied = [...keys.keys()].filter((key) => key.startsWith(`m/${client}/`)).length;
        expect(keys.get(`count/${client}`) ?? 0, `${client}'s counter`).toBe(applied);
      }
    }
  };

  it('the primary killed: the secondary takes over, nothing acknowledged lost, no 500', async () => {
    const old = await formation.primary();
    const load = await through(
      async () => formation.kill(old),
      async () => {
        formation.start(old);
        await formation.waitForHealthy();
      },
    );
    expect(await formation.primary()).not.toBe(old);
    expect(load.stats.pushesAfterMark).toBeGreaterThanOrEqual(10);
  }, 180_000);

  it('the primary frozen (a partition): failed over, and it rejoins as the secondary once it runs again; nothing acknowledged lost, no 500', async () => {
    const old = await formation.primary();
    const load = await through(
      async () => formation.pause(old),
      async () => {
        formation.resume(old);
        await formation.waitForHealthy();
      },
    );
    expect(await formation.primary()).not.toBe(old);
    // Pushes waited on the frozen primary and were answered 503, not left hanging.
    expect(load.stats.push.get(503) ?? 0).toBeGreaterThan(0);
  }, 180_000);

  it('the primary half-dead (its keeper and postmaster frozen, its backends running): failed over, its connections go on taking statements but nothing it commits after is acknowledged; nothing acknowledged lost, nothing backwards, no 500', async () => {
    const old = await formation.primary();
    // Pushes go on on the connections made before; once the monitor has failed it over, pushes
    // sent from then on must be acknowledged by the new primary.
    // Its backends, fenced by no one (its keeper is frozen too), go on answering reads on the
    // connections made before: a client that saw the new primary's state and then reads the old
    // one's is told ClientStateNotFound (its cookie is ahead of what it reads), never shown the
    // old state. See docs/known-limits.md.
    await through(
      async () => void (formation.pauseHalf(old), await formation.waitForPrimary((name) => name !== old)),
      async () => {
        formation.resume(old);
        await formation.waitForHealthy();
      },
      { resets: true },
    );
    expect(await formation.primary()).not.toBe(old);
  }, 180_000);

  it('the synchronous secondary frozen: the primary takes connections but its commits wait, until the monitor lets it go on alone; nothing acknowledged lost, no 500', async () => {
    const primary = await formation.primary();
    const secondary = primary === 'a' ? 'b' : 'a';
    // Once the monitor has let the primary go on alone (wait_primary: no synchronous standby), pushes sent from then on must be acknowledged.
    await through(
      async () => (formation.pause(secondary), await formation.waitForState(primary, 'wait_primary')),
      async () => {
        formation.resume(secondary);
        await formation.waitForHealthy();
      },
    );
    expect(await formation.primary()).toBe(primary);
  }, 180_000);
});

async function until(test: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`No ${what} within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
}
