/**
 * A data migration (`runMigration`) on PostgreSQL while clients push: how fast it goes, and what
 * it costs the pushes.
 *
 * ENTRIES entries in SPACES spaces (default 1M in 1,000) are written first. Then pushers push one
 * mutation at a time (PUSHERS of them, each waiting PAUSE_MS between pushes), half to the space
 * the migration is in, half to any space: for SECONDS s with no migration (idle), then while an
 * entry migration runs over every space in batches of BATCH. Prints the migration's entries per
 * second and the pushes' p50 and p99, idle and while migrating, with the ratio of the p99s (the
 * aim: at most 2x), both measured in the same run.
 *
 * Run: `npm run bench:migrate` (a few minutes at full size; `-- --entries 50000 --spaces 50` for a
 * quick run). Starts a throwaway PostgreSQL with scripts/start-postgres.sh unless DATABASE_URL is set.
 * Not part of `npm test`.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { createContext, handlePush, type SyncContext } from '../src/index.js';
import { transact } from '../src/backend.js';
import { defineMigration, runMigration } from '../src/ops.js';
import { postgresStorage } from '../src/storage/postgres.js';

const { values } = parseArgs({
  options: {
    entries: { type: 'string', default: '1000000' },
    spaces: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '15' },
    pushers: { type: 'string', default: '4' },
    'pause-ms': { type: 'string', default: '10' },
  },
});
const ENTRIES = Number(values.entries);
const SPACES = Number(values.spaces);
const BATCH = Number(values.batch);
const SECONDS = Number(values.seconds);
const PUSHERS = Number(values.pushers);
const PAUSE_MS = Number(values['pause-ms']);

const root = new URL('..', import.meta.url).pathname;
const url = process.env.DATABASE_URL ?? execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();
const sql = postgres(url, { onnotice: () => {}, max: 8 });
const schema = `bench_migrate_${process.pid}`;
await sql.unsafe(`CREATE SCHEMA "${schema}"`);

const mutators = {
  put: async (tx: import('../src/index.js').WriteTransaction, args: unknown) =>
    void (await tx.set(`note/${(args as { n: number }).n % 50}`, args as { n: number })),
};
const ctx: SyncContext = createContext({
  storage: postgresStorage(sql, { schema }),
  mutators,
  pokes: false,
  space: (request) => new URL(request.url).searchParams.get('space') ?? '',
  onError: (error) => console.error(error),
});
const spaceName = (i: number) => `space-${String(i).padStart(5, '0')}`;
const perSpace = Math.ceil(ENTRIES / SPACES);

// A shape change: `title` becomes `name`, and a version field is added.
const rename = defineMigration({
  name: 'bench-rename',
  prefix: 'item/',
  entry: async (tx, key, value) => {
    const { title, ...rest } = value as { title: string };
    await tx.set(key, { ...rest, name: title, v: 2 });
  },
});

try {
  const seeding = performance.now();
  // Four spaces at a time, a thousand entries per transaction.
  for (let first = 0; first < SPACES; first += 4) {
    await Promise.all(
      Array.from({ length: Math.min(4, SPACES - first) }, async (_, j) => {
        const space = spaceName(first + j);
        for (let from = 0; from < perSpace; from += 1000) {
          await transact(ctx, space, async (tx) => {
            for (let i = from; i < Math.min(perSpace, from + 1000); i++)
              await tx.set(`item/${String(i).padStart(7, '0')}`, { title: `Item ${i} of ${space}`, done: i % 3 === 0, tags: ['a', 'b'] });
          });
        }
      }),
    );
    if ((first / 4) % 25 === 0) process.stderr.write(`\rseeding: ${first + 4}/${SPACES} spaces`);
  }
  process.stderr.write(
    `\rseeded ${(perSpace * SPACES).toLocaleString('en-US')} entries in ${SPACES} spaces in ${((performance.now() - seeding) / 1000).toFixed(0)} s\n`,
  );

  let current = spaceName(0);
  const idle = await pushLoad(
    () => current,
    () => sleep(SECONDS * 1000),
  );
  process.stderr.write(`idle: ${idle.count} pushes\n`);
  let entries = 0;
  let seconds = 0;
  const during = await pushLoad(
    () => current,
    async () => {
      const started = performance.now();
      const result = await runMigration(ctx, rename, {
        batch: BATCH,
        onProgress: (now) => {
          current = now.space;
          if (now.spacesDone % 50 === 0)
            process.stderr.write(`\rmigrating: ${now.spacesDone}/${now.spaces} spaces, ${now.entries.toLocaleString('en-US')} entries`);
        },
      });
      seconds = (performance.now() - started) / 1000;
      entries = result.entries;
      process.stderr.write('\n');
    },
  );
  console.log(
    `migration: ${entries.toLocaleString('en-US')} entries in ${SPACES} spaces, batches of ${BATCH}: ${seconds.toFixed(1)} s, ${Math.round(entries / seconds).toLocaleString('en-US')} entries/s`,
  );
  console.log(`pushes, idle:            p50 ${idle.p50.toFixed(1)} ms, p99 ${idle.p99.toFixed(1)} ms (${idle.count} pushes)`);
  console.log(`pushes, while migrating: p50 ${during.p50.toFixed(1)} ms, p99 ${during.p99.toFixed(1)} ms (${during.count} pushes)`);
  console.log(`push p99 while migrating / idle: ${(during.p99 / idle.p99).toFixed(2)}x (aim: at most 2x)`);
} finally {
  await sql.unsafe(`DROP SCHEMA "${schema}" CASCADE`);
  await sql.end();
}

/** Pushes from PUSHERS clients, half to `hot()` (the space being migrated) and half to any space, until `work` ends: their latencies. */
async function pushLoad(hot: () => string, work: () => Promise<void>): Promise<{ p50: number; p99: number; count: number }> {
  let going = true;
  const latencies: number[] = [];
  const pushers = Array.from({ length: PUSHERS }, async (_, p) => {
    const client = `c${p}-${Math.random().toString(36).slice(2)}`;
    for (let id = 1; going; id++) {
      const space = id % 2 === 0 ? hot() : spaceName(Math.floor(Math.random() * SPACES));
      const body = {
        pushVersion: 1,
        clientGroupID: `g-${client}`,
        profileID: 'p',
        schemaVersion: '',
        mutations: [{ clientID: client, id, name: 'put', args: { n: id }, timestamp: Date.now() }],
      };
      const started = performance.now();
      const response = await handlePush(
        new Request(`http://bench/push?space=${space}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        ctx,
      );
      if (response.status !== 200) throw new Error(`push answered ${response.status}: ${await response.text()}`);
      latencies.push(performance.now() - started);
      await sleep(PAUSE_MS);
    }
  });
  await work();
  going = false;
  await Promise.all(pushers);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), count: latencies.length };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
