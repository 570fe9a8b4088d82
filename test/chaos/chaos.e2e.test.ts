/**
 * The fault-injection suite, short, on every topology, with fixed seeds: real server processes
 * over real stores, raw and real clients, backend writes, imports and housekeeping on a jumping
 * clock, and faults (see topologies.ts); the run's record judged by checker.ts, and, where no
 * acknowledged commit may be lost, the servers' webhooks of the change feed by webhook-check.ts.
 * No time bound
 * here but the hang-catching timeout: a busy machine makes a run slower, not wrong. Longer runs:
 * `npm run chaos -- --topology NAME --duration 30m [--seed N]`.
 */
import { describe, expect, it } from 'vitest';
import { haveServers } from '../support/clusters.js';
import { fastLoop } from '../support/stores.js';
import { describe as describeReport, runChaos } from './run.js';
import { TOPOLOGIES } from './topologies.js';

/**
 * Seconds of faults per topology: about four minutes in all on two cores, settling included.
 * The timeout only catches a hang: a run whose servers stall still returns, within about ten
 * minutes (settling four, the last pulls and reads bounded), and reports `not-settled`.
 */
const SECONDS = Number(process.env.CHAOS_SECONDS ?? 18);
const SEEDS: Record<string, number> = {
  sqlite: 101,
  'postgres-js': 102,
  'pg-pool': 103,
  notifiers: 104,
  routed: 105,
  standby: 106,
  'standby-async': 107,
  'standby-reads': 108,
};

/**
 * Topologies run by hand only (`npm run chaos -- --topology NAME`), for CI's time: `pgbouncer`,
 * whose deployment test/topology/pgbouncer.e2e.test.ts runs in CI without faults.
 */
const BY_HAND = new Set(['pgbouncer']);

describe.runIf(!fastLoop)('fault injection', () => {
  for (const name of Object.keys(TOPOLOGIES).filter((topology) => !BY_HAND.has(topology))) {
    const needsPostgres = name !== 'sqlite';
    const webhooks = TOPOLOGIES[name]!.lossAllowed !== true;
    it.runIf(!needsPostgres || haveServers())(
      `${name}: ${TOPOLOGIES[name]!.description}: nothing acknowledged lost or applied twice, no cookie or lastMutationID backwards, every client converged, no 500, no process died${webhooks ? ', every change delivered by webhooks in order' : ''}`,
      async () => {
        const report = await runChaos({ topology: name, seed: SEEDS[name] ?? 1, durationMs: SECONDS * 1_000, webhooks });
        console.log(describeReport(report));
        expect(report.anomalies).toEqual([]);
        // The run did what it is for: requests answered, mutations checked, faults injected.
        expect(report.statuses['200']).toBeGreaterThan(50);
        expect(report.mutationsChecked).toBeGreaterThan(20);
        expect(Object.keys(report.faults).length).toBeGreaterThan(1);
        if (webhooks) expect(report.webhooks?.changes).toBeGreaterThan(100);
      },
      900_000,
    );
  }
});
