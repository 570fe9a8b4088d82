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
      const { code, output } = await runCommand(process.execPath, ['--import', 'tsx', 'test/storage/killed-backends.ts'], { cwd: root, env: { SCHEMA: schema, KILLS: '50' } });
      expect(code, output).toBe(0);
      const outcome = JSON.parse(output.trim().split('\n').at(-1)!) as Outcome;
      console.log(`run ${run}: ${outcome.killed} backends killed; answers ${JSON.stringify(outcome.statuses)}`);
      expect(outcome.killed).toBeGreaterThan(20);
      expect(outcome.statuses['200']).toBeGreaterThan(0);
      expect(outcome.counts).toEqual(outcome.lastMutationIDs);
      outcome.acknowledged.forEach((told, c) => expect(outcome.lastMutationIDs[c] ?? 0).toBeGreaterThanOrEqual(told));
    }
  }, 180_000);
});
