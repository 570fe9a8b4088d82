/** `GET …/changes`: the change feed over HTTP, opened by the server secret only. */
import { describe, expect, it } from 'vitest';
import { createContext, handleRequest, memoryStorage } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { testContext, testMutators } from '../support/helpers.js';

const SECRET = 'a-server-secret-of-32-characters-or-more';

function get(query: string, authorization: string | null = `Bearer ${SECRET}`): Request {
  return new Request(`http://localhost/api/changes?${query}`, { headers: authorization === null ? {} : { authorization } });
}

describe('GET …/changes', () => {
  it('answers a page of the feed to the server secret, and nothing to anyone else', async () => {
    const ctx = testContext({ changes: { secret: SECRET }, authenticate: () => 'alice' });
    await transact(ctx, 'acme', (tx) => tx.set('a', 1));
    const ok = await handleRequest(get('space=acme&after=0'), ctx);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(await ok.json()).toMatchObject({ changes: [{ space: 'acme', op: 'set', key: 'a', after: 1, cursor: '1.0' }], cursor: '1', more: false, version: 1 });
    // A user's auth is not the secret: `authenticate` would let alice in, the feed does not.
    for (const authorization of [null, '', 'Bearer alice', `Bearer ${SECRET}x`, `Bearer ${SECRET.slice(0, -1)}`, SECRET]) {
      const refused = await handleRequest(get('space=acme', authorization), ctx);
      expect(refused.status, String(authorization)).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('?all answers a page of every space, from a store cursor', async () => {
    const ctx = testContext({ changes: { secret: SECRET } });
    await transact(ctx, 'a', (tx) => tx.set('x', 1));
    await transact(ctx, 'b', (tx) => tx.set('y', 2));
    const first = (await (await handleRequest(get('all&limit=1'), ctx)).json()) as { changes: Array<{ space: string }>; cursor: string; more: boolean };
    expect([first.changes.map(({ space }) => space), first.more]).toEqual([['a'], true]);
    const second = (await (await handleRequest(get(`all&after=${encodeURIComponent(first.cursor)}`), ctx)).json()) as typeof first;
    expect([second.changes.map(({ space }) => space), second.more]).toEqual([['b'], false]);
    expect((await handleRequest(get('all&after=nope'), ctx)).status).toBe(400);
  });

  it('is not served without a secret configured', async () => {
    const ctx = testContext({ changes: {} });
    expect((await handleRequest(get('space='), ctx)).status).toBe(404);
  });

  it('answers 400 for a bad cursor or limit, 410 for a cursor the log no longer covers, never 500', async () => {
    const ctx = testContext({ changes: { secret: SECRET } });
    await transact(ctx, '', (tx) => tx.set('a', 1));
    for (const query of ['after=x', 'after=1.2.3', 'limit=0', 'limit=10001', 'limit=abc', 'waitMs=30001', 'waitMs=-1']) {
      const response = await handleRequest(get(query), ctx);
      expect(response.status, query).toBe(400);
    }
    const ahead = await handleRequest(get('after=7'), ctx);
    expect(ahead.status).toBe(410);
    const body = (await ahead.json()) as { error: string; message: string };
    expect(body.error).toBe('Gone');
    expect(body.message).toMatch(/Start again from an export/);
    expect(ctx.errors).toEqual([]);
  });

  it('with waitMs, holds an empty answer until a change comes', async () => {
    const ctx = testContext({ changes: { secret: SECRET } });
    const started = performance.now();
    const waiting = handleRequest(get('after=0&waitMs=20000'), ctx);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await transact(ctx, '', (tx) => tx.set('late', 1));
    const page = (await (await waiting).json()) as { changes: Array<{ key: string }> };
    expect(page.changes.map(({ key }) => key)).toEqual(['late']);
    // Answered by the change, not the timer (a bound at a tenth of it only catches a hang).
    expect(performance.now() - started).toBeLessThan(2_000);
    // Nothing comes: answered empty when the time is up.
    expect(await (await handleRequest(get('after=1&waitMs=30'), ctx)).json()).toMatchObject({ changes: [], cursor: '1' });
  });

  it('createContext refuses a short secret or an unknown option, naming it', () => {
    const make = (changes: unknown) => () => createContext({ storage: memoryStorage(), mutators: testMutators, changes: changes as never });
    expect(make({ secret: 'short' })).toThrow(/changes.secret must be a string of 32 characters or more/);
    expect(make({ secrets: SECRET })).toThrow(/changes.secrets is not an option of changes \(did you mean secret\?\)/);
    expect(make(true)).toThrow(/changes must be an object/);
  });
});
