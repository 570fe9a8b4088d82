/**
 * One timed task of bench/backend.ts, in a process of its own so that its peak memory (maxRSS)
 * is its own: `task store file n`. Prints one JSON line: seconds, entries and maxRSS in MiB.
 *
 * - `dump`: writes a dump of `n` entries to `file` (no store);
 * - `import`: imports `file` into the store's space `bench` (replace);
 * - `export`: exports the space `bench` to `file`, as `viewsync export` does;
 * - `select`: the baseline: the same rows by a bare SELECT, streamed to `file` as key TAB value lines.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { type Storage, createContext } from '../src/index.js';
import { exportSpace, importSpace } from '../src/ops.js';
import { postgresStorage } from '../src/storage/postgres.js';
import { sqliteStorage } from '../src/storage/sqlite.js';

const [task, store, file, count] = process.argv.slice(2) as [string, string, string, string];
const n = Number(count);
const SPACE = 'bench';
/** Where the space's entries are in the key-value table (src/sync/version/keys.ts). */
const ENTRY_PREFIX = `e/${SPACE}/`;

async function write(out: WriteStream, text: string | Uint8Array): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

async function finish(out: WriteStream): Promise<void> {
  out.end();
  await once(out, 'finish');
}

function open(): { storage: Storage; sqlite?: Database.Database; sql?: ReturnType<typeof postgres>; close(): Promise<void> } {
  if (store === 'sqlite') {
    const db = new Database(process.env.SQLITE_FILE!);
    return { storage: sqliteStorage(db), sqlite: db, close: async () => void db.close() };
  }
  const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 4 });
  return { storage: postgresStorage(sql, { schema: 'bench_backend' }), sql, close: () => sql.end() };
}

const started = performance.now();
let entries = n;
if (task === 'dump') {
  const out = createWriteStream(file);
  await write(out, '{"viewsync":"space","format":2,"space":"bench","exported":"2026-11-24T00:00:00.000Z"}\n');
  for (let i = 0; i < n; i += 1_000) {
    let text = '';
    for (let j = i; j < Math.min(n, i + 1_000); j++)
      text += JSON.stringify({ key: `item/${String(j).padStart(8, '0')}`, value: { title: `Item number ${j}`, done: j % 3 === 0, tags: ['a', 'b'] } }) + '\n';
    await write(out, text);
  }
  await write(out, `{"viewsync":"end","entries":${n}}\n`);
  await finish(out);
} else {
  const { storage, sqlite, sql, close } = open();
  const ctx = createContext({ storage, mutators: {}, pokes: false as const, onError: () => {} });
  if (task === 'import') {
    entries = (await importSpace(ctx, SPACE, Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>, { mode: 'replace' })).entries;
  } else if (task === 'export') {
    const out = createWriteStream(file);
    const reader = exportSpace(ctx, SPACE).getReader();
    // Less the header and the end line.
    entries = -2;
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      for (let i = next.value.indexOf(10); i >= 0; i = next.value.indexOf(10, i + 1)) entries++;
      await write(out, next.value);
    }
    await finish(out);
  } else if (task === 'select') {
    const out = createWriteStream(file);
    entries = 0;
    if (sqlite) {
      let text = '';
      for (const row of sqlite
        .prepare('SELECT key, value FROM viewsync_kv WHERE key >= ? AND key < ? ORDER BY key')
        .iterate(ENTRY_PREFIX, `e/${SPACE}0`) as Iterable<{ key: string; value: string }>) {
        text += `${row.key}\t${row.value}\n`;
        entries++;
        if (text.length > 65_536) {
          // A synchronous iterator cannot await a drain: write and move on, as a bare script would.
          out.write(text);
          text = '';
        }
      }
      out.write(text);
    } else {
      const rows = sql!
        .unsafe('SELECT key, value FROM bench_backend.viewsync_kv WHERE key >= $1 AND key < $2 ORDER BY key', [ENTRY_PREFIX, `e/${SPACE}0`])
        .cursor(4_096);
      for await (const page of rows) {
        let text = '';
        for (const row of page as unknown as Array<{ key: string; value: string }>) text += `${row.key}\t${row.value}\n`;
        entries += page.length;
        await write(out, text);
      }
    }
    await finish(out);
  }
  await close();
}
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ task, store, entries, seconds, maxRSSMiB: process.resourceUsage().maxRSS / 1024 }));
