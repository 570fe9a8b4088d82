/**
 * A process that only delivers webhooks, from the PostgreSQL store the environment names: what
 * webhook-kill.e2e.test.ts kills mid-delivery. `CLOCK_OFFSET_MS` runs its clock ahead, as if
 * that much time had passed (a lease left by a killed process has then run out).
 */
import postgres from 'postgres';
import { createContext } from '../../src/index.js';
import { startWebhooks } from '../../src/backend.js';
import { postgresStorage } from '../../src/storage/postgres.js';

const env = process.env as Record<string, string>;
const sql = postgres(env.DATABASE_URL!, { onnotice: () => {}, max: 3 });
const offset = Number(env.CLOCK_OFFSET_MS ?? 0);
const ctx = createContext({
  storage: postgresStorage(sql, { schema: env.SCHEMA!, tablePrefix: env.TABLE_PREFIX! }),
  mutators: {},
  clock: () => Date.now() + offset,
  onError: (error) => console.error(String(error)),
  changes: { webhooks: { hook: { url: env.RECEIVER_URL!, secret: env.SECRET!, allowPrivateAddresses: true, timeoutMs: 5_000, maxBatch: 2 } } },
});
startWebhooks(ctx, { sweepMs: 100 });
// The line a watched process is ready at (test/chaos/processes.ts): this one serves nothing.
console.log(JSON.stringify({ url: 'http://127.0.0.1:1/' }));
// Its stdin is the test's pipe: when the test ends, however it ends, so does this process.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
