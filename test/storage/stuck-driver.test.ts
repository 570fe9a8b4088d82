/**
 * postgres.js 3.4 can lose a BEGIN, or a statement, among connections cut under it: under the
 * fault-injection suite's network faults, pushes of a space stayed pending for minutes after the
 * faults ended, while new queries on the same client ran (and every later push of the space
 * queued behind them). The store gives such a call up after 30 s: a lost connection, answered
 * 503, never a request held for ever. A fake postgres.js client that never starts or answers
 * stands in for the stuck one.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handlePull, handlePush, createContext } from '../../src/index.js';
import { beginGuarded, type PostgresJsClient, type PostgresJsTransaction, unlessStuck } from '../../src/storage/postgres-js.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { isUnreachable } from '../../src/storage/unreachable.js';
import { mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';

/** A postgres.js client whose BEGINs and statements are held until the test lets them go. */
function stuckClient() {
  const held: Array<(tx: PostgresJsTransaction) => Promise<unknown>> = [];
  const statements: string[] = [];
  const tx: PostgresJsTransaction = { unsafe: async (query: string) => (statements.push(query), []) };
  const client: PostgresJsClient = {
    begin: (_mode, fn) => new Promise<unknown>(() => void held.push(fn as (tx: PostgresJsTransaction) => Promise<unknown>)),
    unsafe: () => new Promise<never>(() => {}),
  };
  return { client, held, statements, tx };
}

afterEach(() => vi.useRealTimers());

describe('a postgres.js call that never starts or never answers', () => {
  it('a transaction postgres.js does not start within 30 s is given up as a lost connection, and if it starts after all it ends at once, running nothing', async () => {
    vi.useFakeTimers();
    const { client, held, statements, tx } = stuckClient();
    const body = vi.fn(async () => 'ran');
    const outcome = beginGuarded(client, 'ISOLATION LEVEL READ COMMITTED', body).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(29_000);
    expect(await Promise.race([outcome, 'pending'])).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    const error = await outcome;
    expect(isUnreachable(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/did not start the transaction within 30 s; nothing of it was committed/);
    // postgres.js starts it after all: it is rolled back, empty.
    await expect(held[0]!(tx)).rejects.toThrow(/nothing of it was committed/);
    expect(body).not.toHaveBeenCalled();
    expect(statements).toEqual([]);
  });

  it('a statement of a transaction that gets no answer within 30 s is given up as a lost connection at once, and the backend running the transaction is ended from another connection, freeing its locks', async () => {
    vi.useFakeTimers();
    const outside: Array<[string, unknown[]]> = [];
    const inside: string[] = [];
    const client: PostgresJsClient = {
      begin: (_mode, fn) =>
        fn({
          // Lost: no answer ever. (postgres.js's query knows its connection's backend once sent.)
          unsafe: (query: string) => (inside.push(query), Object.assign(new Promise(() => {}), { state: { pid: 4242, secret: 1 } })),
        }),
      unsafe: (query: string, params?: never[]) => (outside.push([query, params ?? []]), Promise.resolve([])),
    };
    const outcome = beginGuarded(client, 'ISOLATION LEVEL READ COMMITTED', async (query) => {
      await query('SELECT lock', []);
      return 'committed';
    }).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(29_000);
    expect(await Promise.race([outcome, 'pending'])).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    const error = await outcome;
    expect(isUnreachable(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/did not answer a statement of the transaction within 30 s/);
    expect(inside).toEqual(['SELECT lock']);
    // Unless it started something since: a pid the server has given to a working backend is left alone.
    expect(outside).toEqual([
      [expect.stringMatching(/pg_terminate_backend\(pid\).*WHERE pid = \$1::bigint AND state_change < now\(\) - make_interval\(secs => \$2\)/), [4242, 15]],
    ]);
    // And nothing more is sent on the stuck connection: no ROLLBACK written behind the lost statement.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(inside).toHaveLength(1);
  });

  it('the statement that ends a lost backend, should it fail or go unanswered itself, is sent again until the server answers it, a bounded number of times', async () => {
    vi.useFakeTimers();
    const sent: unknown[] = [];
    // The first attempt meets a cut, the second is lost, the third is answered.
    const answers = [
      () => Promise.reject(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })),
      () => new Promise<never>(() => {}),
      () => Promise.resolve([{ pg_terminate_backend: true }]),
    ];
    const client: PostgresJsClient = {
      begin: () => new Promise(() => {}),
      unsafe: (_query, params) => (sent.push(params), (answers.shift() ?? (() => Promise.resolve([])))()),
    };
    const lost = Object.assign(new Promise<never>(() => {}), { state: { pid: 77, secret: 1 } });
    void unlessStuck(lost, 30_000, client).catch(() => {});
    await vi.advanceTimersByTimeAsync(30_000);
    expect(sent).toEqual([[77, 15]]);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(sent).toHaveLength(3);

    // A server that never answers it: asked five times, then left alone.
    const never: unknown[] = [];
    const silent: PostgresJsClient = { begin: () => new Promise(() => {}), unsafe: (_query, params) => (never.push(params), new Promise<never>(() => {})) };
    void unlessStuck(Object.assign(new Promise<never>(() => {}), { state: { pid: 78, secret: 1 } }), 30_000, silent).catch(() => {});
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(never).toHaveLength(5);
  });

  it('a statement outside a transaction (a pull read in one go) that gets no answer within 30 s is given up as a lost connection, and the backend it waits on is ended (later statements queue behind it on its connection)', async () => {
    vi.useFakeTimers();
    const outside: unknown[] = [];
    const client: PostgresJsClient = { begin: () => new Promise(() => {}), unsafe: (_query, params) => (outside.push(params), Promise.resolve([])) };
    const lost = Object.assign(new Promise<never>(() => {}), { state: { pid: 77, secret: 1 } });
    const outcome = unlessStuck(lost, 30_000, client).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(30_000);
    const error = await outcome;
    expect(isUnreachable(error)).toBe(true);
    expect((error as Error).message).toMatch(/did not answer the statement within 30 s/);
    expect(outside).toEqual([[77, 15]]);
    expect(await unlessStuck(Promise.resolve(7))).toBe(7);
  });

  it('pushes and pulls on a store whose postgres.js is stuck answer 503 with Retry-After after 30 s, not never', async () => {
    vi.useFakeTimers();
    const { client } = stuckClient();
    // Its first call (making the tables) is stuck too: every request waits on it, and is answered when it is given up.
    const ctx = createContext({ storage: postgresStorage(client), mutators: testMutators, onError: () => {} });
    const push = handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])), ctx);
    const pull = handlePull(post('/pull', pullBody('g', { order: 0 })), ctx);
    await vi.advanceTimersByTimeAsync(60_000);
    for (const response of await Promise.all([push, pull])) {
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
    }
  });
});
