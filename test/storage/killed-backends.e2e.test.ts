import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';

// A failover or a pooler restart, as a process sees it: its PostgreSQL backends killed while it
// pushes and pulls. postgres.js 3.4.9 used to end such a process about every other kill storm
// (an uncaught TypeError from a timer: a ROLLBACK written to a socket already gone).
const url = process.env.DATABASE_URL;
const root = fileURLToPath(new URL('../..', import.meta.url));
const schemas: string[] = [];

afterAll(async () => {
  if (url === undefined) return;
  const admin = postgres(url, { onnotice: () => {}, max: 1 });
  for (const schema of schemas) await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

interface Outcome {
  killed: number;
  statuses: Record<string, number>;
  acknowledged: number[];
  counts: Array<number | null>;
  lastMutationIDs: Array<number | null>;
}

describe.runIf(url)('backends killed under pushes (a real PostgreSQL server)', () => {
  it('the process outlives every kill, and every mutation is applied once: its count is its lastMutationID, and at least what its client was told', async () => {
    for (let run = 0; run < 2; run++) {
      const schema = `killed_${process.pid}_${run}`;
      schemas.push(schema);
      const { code, output } = await runCommand(process.execPath, ['--import', 'tsx', 'test/storage/killed-backends.ts'], {
        cwd: root,
        env: { SCHEMA: schema, KILLS: '30' },
      });
      expect(code, output).toBe(0);
      const outcome = JSON.parse(output.trim().split('\n').at(-1)!) as Outcome;
      console.log(`run ${run}: ${outcome.killed} backends killed; answers ${JSON.stringify(outcome.statuses)}`);
      expect(outcome.killed).toBeGreaterThanOrEqual(30);
      expect(outcome.statuses['200']).toBeGreaterThan(0);
      // A killed backend is a lost connection: temporary, 503, on every store; never a 500.
      expect(Object.keys(outcome.statuses).filter((status) => status !== '200' && status !== '503')).toEqual([]);
      expect(outcome.counts).toEqual(outcome.lastMutationIDs);
      outcome.acknowledged.forEach((told, c) => void expect(outcome.lastMutationIDs[c] ?? 0).toBeGreaterThanOrEqual(told));
    }
  }, 180_000);
});

describe.runIf(url)('connections killed as a pg-style pool hands them out (a fault proxy before a real PostgreSQL server)', () => {
  // pg-pool, and Neon's copy of it, stop listening to a connection's errors as they hand it out,
  // from inside the read that carried its ReadyForQuery: a FATAL in that same read used to be
  // an 'error' event with no listener, which ended the process after the first kill.
  for (const pool of ['pg', 'neon'] as const) {
    it(`${pool === 'pg' ? "pg's Pool" : "Neon's Pool over WebSocket"}: the process outlives every kill, each request killed answers 503, and every mutation is applied once`, async () => {
      const schema = `handed_${pool}_${process.pid}`;
      schemas.push(schema);
      const { code, output } = await runCommand(process.execPath, ['--import', 'tsx', 'test/storage/handed-out.ts'], {
        cwd: root,
        env: { SCHEMA: schema, POOL: pool, KILLS: '10' },
      });
      expect(code, output).toBe(0);
      const outcome = JSON.parse(output.trim().split('\n').at(-1)!) as {
        accepted: number;
        statuses: Record<string, number>;
        acknowledged: number;
        count: number;
        lastMutationID: number;
      };
      // Each of the 20 requests met a connection killed as it was handed out: a lost connection is temporary.
      expect(outcome.statuses).toEqual({ 503: 20 });
      expect(outcome.accepted).toBeGreaterThanOrEqual(20);
      expect(outcome).toMatchObject({ acknowledged: 10, count: 10, lastMutationID: 10 });
    }, 120_000);
  }
});
