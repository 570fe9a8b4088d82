/** The PostgreSQL store's tables: made, and upgraded from an older schema (postgres.ts). */
import type { PostgresDriver } from './postgres-connection.js';
import { quoteIdentifier } from './sql.js';

/**
 * Schema versions in order. Idempotent, and safe when instances start at once: the check and the
 * changes run in one transaction under an advisory lock.
 */
export async function migrateTables(driver: PostgresDriver, t: { kv: string; meta: string; schema: string | undefined; lockName: string }): Promise<void> {
  const migrations = [`CREATE TABLE IF NOT EXISTS ${t.kv} (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)`];
  await driver.transaction('ISOLATION LEVEL READ COMMITTED', async (query) => {
    // With the check, the server's notices off for this transaction: `... IF NOT EXISTS` on tables
    // that exist says NOTICE, which postgres.js prints (an object that looks like an error) on
    // every start.
    const [encoding] = await query(`SELECT current_setting($1) AS encoding, set_config('client_min_messages', 'warning', true)`, ['server_encoding']);
    if (encoding?.encoding !== 'UTF8')
      throw new Error(`The database's encoding is ${String(encoding?.encoding)}: viewsync needs UTF8 (key order is UTF-8 byte order)`);
    await query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${t.lockName} schema`]);
    if (t.schema !== undefined) await query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(t.schema)}`, []);
    await query(`CREATE TABLE IF NOT EXISTS ${t.meta} (version integer NOT NULL)`, []);
    const [row] = await query(`SELECT max(version) AS version FROM ${t.meta}`, []);
    const version = Number(row?.version ?? 0);
    if (version > migrations.length)
      throw new Error(`The viewsync tables are at schema version ${version}, newer than this viewsync knows (${migrations.length}): upgrade viewsync`);
    for (const statement of migrations.slice(version)) await query(statement, []);
    if (version < migrations.length) {
      await query(`DELETE FROM ${t.meta}`, []);
      await query(`INSERT INTO ${t.meta} (version) VALUES ($1)`, [migrations.length]);
    }
    return { result: undefined, finish: [] };
  });
}
