/**
 * The real client against the Node adapter on a pg Pool store (the node-postgres interface that
 * Neon's and Vercel's drivers share) on the real PostgreSQL server: the whole interop suite.
 */
import pg from 'pg';
import { afterAll, it } from 'vitest';
import { serve } from '../../adapters/node.js';
import { postgresStorage } from '../../src/postgres.js';
import { runtimeContext } from '../runtime/context.js';
import { describeInterop } from './suite.js';

const url = process.env.DATABASE_URL;
if (url === undefined) {
  it.skip('interop on a pg Pool: set DATABASE_URL (scripts/start-postgres.sh starts one)', () => {});
} else {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  pool.on('error', () => {});
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  describeInterop('node on a pg Pool', ({ port = 0, requireAuth } = {}) => {
    const schema = `interop_pg_${process.pid}_${schemas.length}`;
    schemas.push(schema);
    const authenticate =
      requireAuth === undefined ? undefined : (request: Request) => (request.headers.get('authorization') === requireAuth ? 'interop-user' : null);
    return serve(runtimeContext(postgresStorage(pool, { schema }), authenticate && { authenticate }), { port });
  });
}
