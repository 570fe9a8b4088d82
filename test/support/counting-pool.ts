import pg from 'pg';

/**
 * A pg Pool on `url` whose connections note the first two words of every statement they send
 * (`SELECT *`, `BEGIN ISOLATION`…), to count what a pull costs in statements.
 */
export function countingPool(url: string): { pool: pg.Pool; counted: { connect(): Promise<pg.PoolClient> }; statements: string[] } {
  const statements: string[] = [];
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const counted = {
    async connect() {
      const client = await pool.connect();
      return Object.assign(Object.create(client) as typeof client, {
        query: (text: string, params?: unknown[]) => (statements.push(text.split(' ').slice(0, 2).join(' ')), client.query(text, params)),
        release: (destroy?: boolean) => client.release(destroy),
      });
    },
  };
  return { pool, counted, statements };
}
