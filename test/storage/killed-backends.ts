// A process that pushes and pulls on PostgreSQL while another connection kills its backends
// (pg_terminate_backend), as a failover or a pooler restart does. It must outlive every kill:
// an uncaught error ends it with a non-zero code. Prints one JSON line of what it saw. Run by
// killed-backends.e2e.test.ts with DATABASE_URL, SCHEMA and KILLS (how many backends to kill) set.
import postgres from 'postgres';
import { handlePull, handlePush, type SyncContext, createContext } from '../../src/index.js';
import { postgresNotifier, postgresStorage } from '../../src/postgres.js';
import { mutation, post, pullBody, pushBody } from '../support/helpers.js';

const url = process.env.DATABASE_URL!;
const schema = process.env.SCHEMA!;
const kills = Number(process.env.KILLS ?? 50);
const app = `victim_${process.pid}`;
const sql = postgres(url, {
  onnotice: () => {},
  max: 6,
  connection: { application_name: app },
  fetch_types: process.env.FETCH_TYPES === 'on',
  backoff: () => 0.05,
});
const admin = postgres(url, { onnotice: () => {}, max: 1 });
const ctx: SyncContext = createContext({
  storage: postgresStorage(sql, { schema }),
  pokes: { notifier: postgresNotifier(sql, { channel: schema }) },
  mutators: {
    // Several statements and awaits per mutation, so that kills land in every part of a push.
    add: async (tx, args) => {
      const key = `count/${tx.clientID}`;
      await tx.set(`seen/${tx.clientID}/${tx.mutationID}`, args ?? null);
      await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1);
    },
  },
  onError: () => {},
});

const clients = 8;
const acknowledged = new Array<number>(clients).fill(0);
const statuses: Record<number, number> = {};
let stop = false;

async function client(c: number): Promise<void> {
  let next = 1;
  while (!stop) {
    // As the real client: every unacknowledged mutation again, and one more.
    const mutations = [];
    for (let id = acknowledged[c]! + 1; id <= next; id++) mutations.push(mutation(`c${c}`, id, 'add', id));
    const response = await handlePush(post('/push', pushBody(`g${c}`, mutations)), ctx);
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    await response.text();
    if (response.status === 200) acknowledged[c] = next++;
    await handlePull(post('/pull', pullBody(`g${c}`, null)), ctx).then((r) => r.text());
  }
}

// Kills until `kills` backends are gone, not for a number of rounds: on a busy machine most
// rounds can find every backend idle, and a storm of a handful of kills proves little.
async function killer(): Promise<number> {
  let killed = 0;
  const deadline = performance.now() + 90_000;
  while (killed < kills && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
    const rows = await admin.unsafe(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, [app]);
    killed += rows.filter((row) => row.ok).length;
  }
  return killed;
}

const running = Array.from({ length: clients }, (_, c) => client(c));
const killed = await killer();
stop = true;
await Promise.all(running);
// Every acknowledged mutation applied exactly once, none lost: each client's count is its
// lastMutationID, and at least what it was told.
const { lastMutationIDChanges } = (await (await handlePull(post('/pull', pullBody('checker', null)), ctx)).json()) as {
  lastMutationIDChanges: Record<string, number>;
};
const counts: number[] = [];
for (let c = 0; c < clients; c++) {
  const groups = (await (await handlePull(post('/pull', pullBody(`g${c}`, null)), ctx)).json()) as {
    lastMutationIDChanges: Record<string, number>;
    patch: Array<{ key?: string; value?: unknown }>;
  };
  counts.push(groups.patch.find((op) => op.key === `count/c${c}`)?.value as number);
  lastMutationIDChanges[`c${c}`] = groups.lastMutationIDChanges[`c${c}`]!;
}
console.log(JSON.stringify({ killed, statuses, acknowledged, counts, lastMutationIDs: acknowledged.map((_, c) => lastMutationIDChanges[`c${c}`]) }));
await Promise.all([sql.end({ timeout: 1 }), admin.end({ timeout: 1 })]);
