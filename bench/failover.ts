/**
 * Failover under an HA manager: how long from the primary's death to the first acknowledged
 * push, on a pg_auto_failover formation on loopback (test/support/auto-failover.ts: a monitor, a
 * primary and a synchronous secondary, tuned as docs/production.md shows). The app is
 * postgres.js with both nodes in its URL and `target_session_attrs=primary`, in process, with
 * three writers pushing and one observer pulling in a loop (test/failover/load.ts, 20 ms between
 * retries). Each run injects the fault, waits for the first push sent after it to be
 * acknowledged, then brings the old primary back as the secondary for the next run. Per run:
 * when the new primary took writes (polled every 100 ms, the manager's share), when the first
 * push sent after the fault was acknowledged (the app's view), the longest time without any push
 * acknowledged (the outage: a half-dead primary's backends go on acknowledging pushes until its
 * synchronous standby leaves it to be promoted), the client groups told ClientStateNotFound, and
 * what was acknowledged checked.
 *
 * Run: `npm run bench:failover` (about a minute per five runs). Env: RUNS (5 per fault), FAULTS
 * (`kill,freeze,half`: SIGKILL of the node, SIGSTOP of the node, SIGSTOP of its keeper and
 * postmaster only). Not part of `npm test`. The table on stdout.
 */
import { execFileSync } from 'node:child_process';
import postgres from 'postgres';
import { createContext } from '../src/index.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { type Formation, type NodeName, startFormation } from '../test/support/auto-failover.js';
import { countingMutators, pullOnce, sleep, startLoad } from '../test/failover/load.js';
import { machineLine } from './cpu.js';
import { median, quantile } from './measure.js';
import { type Row, renderTable } from './table.js';

const RUNS = Number(process.env.RUNS ?? 5);
const FAULTS = (process.env.FAULTS ?? 'kill,freeze,half').split(',') as Array<'kill' | 'freeze' | 'half'>;
const startLine = machineLine();

const formation = await startFormation();
const sql = postgres(formation.url, {
  max: 6,
  fetch_types: false,
  onnotice: () => {},
  connect_timeout: 2,
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
});
const storage = postgresStorage(sql, { lostAfterMs: 3_000 });
await storage.migrate();
const ctx = createContext({ storage, mutators: countingMutators });
const rows: Row[] = [];
const loads: string[] = [];
try {
  for (const fault of FAULTS) {
    const manager: number[] = [];
    const app: number[] = [];
    const outage: number[] = [];
    // Client groups told ClientStateNotFound (started again as new groups): writers, observers.
    let toldWriters = 0;
    let toldObservers = 0;
    for (let run = 0; run < RUNS; run++) {
      const old = await formation.primary();
      const load = startLoad(ctx, { writers: 3, observers: 1, prefix: `${fault}${run}-` });
      while ((load.stats.push.get(200) ?? 0) < 20) await sleep(20);
      const at = performance.now();
      inject(formation, fault, old);
      load.mark();
      // The longest time without a push acknowledged, from the fault on, sampled every 10 ms.
      let [lastAcknowledged, lastCount, longest, watching] = [at, load.stats.push.get(200) ?? 0, 0, true];
      const watcher = (async () => {
        while (watching) {
          const count = load.stats.push.get(200) ?? 0;
          if (count !== lastCount) [lastCount, lastAcknowledged] = [count, performance.now()];
          longest = Math.max(longest, performance.now() - lastAcknowledged);
          await sleep(10);
        }
      })();
      await formation.waitForPrimary((name) => name !== old, 120_000);
      manager.push(performance.now() - at);
      while (load.stats.firstPushAfterMark === undefined) await sleep(10);
      app.push(load.stats.firstPushAfterMark - at);
      // Pushes acknowledged by the new primary for a second: the outage is over.
      await sleep(1_000);
      watching = false;
      await watcher;
      outage.push(longest);
      await load.stop();
      if (load.stats.failures.length > 0) throw new Error(`Answers other than 200 and 503: ${load.stats.failures.slice(0, 3).join('; ')}`);
      // The old primary back first: a half-dead one's backends would answer the check's read.
      if (fault === 'kill') formation.start(old);
      else formation.resume(old);
      await formation.waitForHealthy(120_000);
      await checkAcknowledged(load.groups);
      for (const group of load.groups) group.writes ? (toldWriters += group.generations.length - 1) : (toldObservers += group.generations.length - 1);
      loads.push(
        execFileSync('uptime', { encoding: 'utf8' })
          .replace(/.*load average: /, '')
          .trim(),
      );
      process.stderr.write(
        `${fault} run ${run + 1}: new primary writable after ${(manager.at(-1)! / 1000).toFixed(1)} s, first push sent after the fault acknowledged after ${(app.at(-1)! / 1000).toFixed(1)} s, longest time without an acknowledged push ${(outage.at(-1)! / 1000).toFixed(1)} s\n`,
      );
    }
    const describe = {
      kill: 'primary killed (SIGKILL)',
      freeze: 'primary frozen (SIGSTOP, a partition)',
      half: 'primary half-dead (keeper and postmaster SIGSTOPped)',
    }[fault];
    rows.push({
      benchmark: `${describe}: new primary takes writes, median`,
      value: median(manager) / 1000,
      unit: 's',
      note: `max ${(Math.max(...manager) / 1000).toFixed(1)} s`,
    });
    rows.push({
      benchmark: `${describe}: first push sent after it acknowledged, median`,
      value: median(app) / 1000,
      unit: 's',
      note: `p90 ${(quantile(app, 0.9) / 1000).toFixed(1)} s, max ${(Math.max(...app) / 1000).toFixed(1)} s, ${RUNS} runs`,
    });
    rows.push({
      benchmark: `${describe}: longest time without an acknowledged push, median`,
      value: median(outage) / 1000,
      unit: 's',
      note: `max ${(Math.max(...outage) / 1000).toFixed(1)} s`,
    });
    rows.push({
      benchmark: `${describe}: client groups told ClientStateNotFound`,
      value: toldWriters + toldObservers,
      unit: 'groups',
      note: `${toldWriters} of ${3 * RUNS} writers, ${toldObservers} of ${RUNS} observers; no acknowledged mutation lost`,
    });
  }
} finally {
  await sql.end({ timeout: 1 });
  await formation.stop();
}
console.log(startLine);
console.log(`load average after each run (1, 5, 15 min): ${loads.join(' / ')}`);
console.log(renderTable(rows));

function inject(target: Formation, fault: 'kill' | 'freeze' | 'half', name: NodeName): void {
  if (fault === 'kill') target.kill(name);
  else if (fault === 'freeze') target.pause(name);
  else target.pauseHalf(name);
}

/** Every acknowledged mutation's record is in the store, and each counted once. */
async function checkAcknowledged(groups: ReturnType<typeof startLoad>['groups']): Promise<void> {
  const answer = await pullOnce(ctx, { groupID: `check-${Math.random()}`, cookie: null });
  if ('error' in answer) throw new Error(answer.error);
  const keys = new Map(answer.patch.flatMap((op) => (op.op === 'put' ? [[op.key, op.value] as const] : [])));
  for (const life of groups.filter((group) => group.writes).flatMap((group) => group.generations)) {
    for (let id = 1; id <= life.acknowledged; id++)
      if (!keys.has(`m/${life.clientID}/${id}`)) throw new Error(`Acknowledged mutation ${life.clientID}/${id} lost`);
    const applied = [...keys.keys()].filter((key) => key.startsWith(`m/${life.clientID}/`)).length;
    if ((keys.get(`count/${life.clientID}`) ?? 0) !== applied)
      throw new Error(`${life.clientID}'s counter is ${String(keys.get(`count/${life.clientID}`))}, ${applied} applied`);
  }
}
