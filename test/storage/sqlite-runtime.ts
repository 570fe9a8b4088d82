/**
 * The storage conformance suite on `sqliteStorage` over the runtime's own SQLite: `node:sqlite` in
 * Deno, `bun:sqlite` in Bun. Run by sqlite-runtimes.e2e.test.ts, which reads the JSON line it prints:
 * every check's name, and the error of each that failed. `deno run` / `bun` this file, with a
 * folder for database files as its argument.
 */
import { sqliteStorage, type SQLiteDatabase } from '../../src/storage/sqlite.ts';
import { storageConformance } from '../../src/testing/conformance.ts';

declare const Bun: unknown;
const dir = process.argv[process.argv.length - 1]!;
const Database = (typeof Bun !== 'undefined' ? (await import('bun:sqlite' as string)).Database : (await import('node:sqlite')).DatabaseSync) as new (
  path: string,
) => SQLiteDatabase;
let files = 0;
const results: Array<{ name: string; error?: string }> = [];
for (const [where, open] of [
  ['memory', () => new Database(':memory:')],
  ['file', () => new Database(`${dir}/db-${++files}.sqlite`)],
] as const) {
  for (const check of storageConformance(() => sqliteStorage(open()), { runs: 50 })) {
    try {
      await check.run();
      results.push({ name: `${where}: ${check.name}` });
    } catch (error) {
      results.push({ name: `${where}: ${check.name}`, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  }
}
console.log(JSON.stringify(results));
