/**
 * A backend write on one instance pokes the poke streams of its space on another, through one
 * PostgreSQL database (postgresNotifier): a real server, as instances share one in production.
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { handlePoke, type SyncContext, createContext } from '../../src/index.js';
import { mutate, transact } from '../../src/backend.js';
import { importSpace } from '../../src/ops.js';
import { postgresNotifier, postgresStorage } from '../../src/postgres.js';
import { testMutators } from '../support/helpers.js';
import { EventReader } from '../poke/sse.js';

const url = process.env.DATABASE_URL;

describe.skipIf(url === undefined)('backend writes poke other instances through PostgreSQL', () => {
  const schema = `backend_poke_${process.pid}`;
  const clients: Array<ReturnType<typeof postgres>> = [];
  afterAll(async () => {
    await clients[0]?.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await Promise.all(clients.map((sql) => sql.end()));
  });

  /** An instance: its own connections, the shared tables, pokes through LISTEN/NOTIFY. */
  function instance(): SyncContext {
    const sql = postgres(url!, { onnotice: () => {}, max: 4 });
    clients.push(sql);
    return createContext({
      storage: postgresStorage(sql, { schema }),
      mutators: testMutators,
      space: (request) => new URL(request.url).searchParams.get('space') ?? '',
      pokes: { notifier: postgresNotifier(sql, { channel: schema }), coalesceMs: 0 },
      onError: (error) => console.error(error),
    });
  }

  it('transact, mutate and importSpace on A each poke a subscriber of the space on B, and only of that space', async () => {
    const [a, b] = [instance(), instance()];
    const subscribe = async (space: string) => {
      const response = await handlePoke(new Request(`http://b/poke?space=${space}`), b);
      expect(response.status).toBe(200);
      const reader = new EventReader(response.body!);
      await reader.until(() => reader.comments >= 1);
      return reader;
    };
    const [acme, other] = [await subscribe('acme'), await subscribe('other')];
    await transact(a, 'acme', (tx) => tx.set('invoice/1', { paid: true }));
    await acme.until(() => acme.pokes === 1);
    await mutate(a, 'acme', 'put', { key: 'invoice/2', value: { paid: false } });
    await acme.until(() => acme.pokes === 2);
    await importSpace(a, 'acme', ['{"viewsync":"space","format":2}\n{"key":"seed","value":1}\n{"viewsync":"end","entries":1}\n'], { mode: 'merge' });
    await acme.until(() => acme.pokes === 3);
    // A call that writes nothing pokes no one.
    await transact(a, 'acme', (tx) => tx.get('seed'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(acme.pokes).toBe(3);
    expect(other.pokes).toBe(0);
    await Promise.all([acme.cancel(), other.cancel()]);
  });

  it('a space whose name holds U+0000, which a NOTIFY payload cannot, still pokes the other instance, and only that space', async () => {
    const [a, b] = [instance(), instance()];
    const subscribe = async (space: string) => {
      const response = await handlePoke(new Request(`http://b/poke?space=${encodeURIComponent(space)}`), b);
      expect(response.status).toBe(200);
      const reader = new EventReader(response.body!);
      await reader.until(() => reader.comments >= 1);
      return reader;
    };
    const [nul, plain, colon] = [await subscribe('a\u0000b'), await subscribe('a'), await subscribe('x!"y":z')];
    await transact(a, 'a\u0000b', (tx) => tx.set('k', 1));
    await nul.until(() => nul.pokes === 1);
    await transact(a, 'x!"y":z', (tx) => tx.set('k', 1));
    await colon.until(() => colon.pokes === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect([nul.pokes, plain.pokes, colon.pokes]).toEqual([1, 0, 1]);
    await Promise.all([nul.cancel(), plain.cancel(), colon.cancel()]);
  });
});
