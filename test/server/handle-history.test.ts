/** `GET …/history`: a space as of a version, or its history, over HTTP, opened by the server secret only. */
import { describe, expect, it } from 'vitest';
import { handleRequest } from '../../src/index.js';
import { handleHistory, transact } from '../../src/backend.js';
import { testContext } from '../support/helpers.js';

const SECRET = 'a-server-secret-of-32-characters-or-more';

function get(query: string, authorization: string | null = `Bearer ${SECRET}`): Request {
  return new Request(`http://localhost/api/history?${query}`, { headers: authorization === null ? {} : { authorization } });
}

/** A space `s` at version 4: v1 sets a and b, v2 sets a (alice), v3 deletes b, v4 sets c/x. */
async function fourVersions() {
  const ctx = testContext({ changes: { secret: SECRET } });
  await transact(ctx, 's', async (tx) => {
    await tx.set('a', 1);
    await tx.set('b', 1);
  });
  await transact(ctx, 's', (tx) => tx.set('a', 2), { userID: 'alice' });
  await transact(ctx, 's', (tx) => tx.del('b'));
  await transact(ctx, 's', (tx) => tx.set('c/x', 3));
  return ctx;
}

async function answer(ctx: Parameters<typeof handleRequest>[1], query: string): Promise<unknown> {
  const response = await handleRequest(get(query), ctx);
  expect(response.status, query).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return response.json();
}

describe('GET …/history', () => {
  it('with version, answers the space as it was then, a page at a time', async () => {
    const ctx = await fourVersions();
    expect(await answer(ctx, 'space=s&version=1')).toEqual({
      version: 1,
      entries: [
        ['a', 1],
        ['b', 1],
      ],
      more: false,
    });
    expect(await answer(ctx, 'space=s&version=2&limit=1')).toEqual({ version: 2, entries: [['a', 2]], more: true, next: 'a' });
    expect(await answer(ctx, 'space=s&version=2&limit=1&after=a')).toEqual({ version: 2, entries: [['b', 1]], more: false });
    expect(await answer(ctx, 'space=s&version=4&prefix=c%2F')).toEqual({ version: 4, entries: [['c/x', 3]], more: false });
    expect(await answer(ctx, 'space=s&version=0')).toEqual({ version: 0, entries: [], more: false });
    expect(ctx.errors).toEqual([]);
  });

  it('without version, answers the changes of a key, a prefix or the space, and what made each', async () => {
    const ctx = await fourVersions();
    const history = (await answer(ctx, 'space=s&key=a')) as { changes: Array<Record<string, unknown>>; kept: unknown; version: number; more: boolean };
    expect(history).toMatchObject({ kept: { from: 0, to: 4 }, version: 4, more: false });
    expect(history.changes).toEqual([
      { version: 1, seq: 0, at: expect.any(Number), key: 'a', after: 1, by: { kind: 'backend', call: 'transact', userID: null } },
      { version: 2, seq: 0, at: expect.any(Number), key: 'a', before: 1, after: 2, by: { kind: 'backend', call: 'transact', userID: 'alice' } },
    ]);
    const keysOf = async (query: string) =>
      ((await answer(ctx, query)) as typeof history).changes.map(({ version, key }) => `${String(version)}:${String(key)}`);
    expect(await keysOf('space=s')).toEqual(['1:a', '1:b', '2:a', '3:b', '4:c/x']);
    expect(await keysOf('space=s&prefix=b')).toEqual(['1:b', '3:b']);
    expect(await keysOf('space=s&after=2')).toEqual(['3:b', '4:c/x']);
    // A page ends between versions: version 1's two changes stay together.
    expect(await answer(ctx, 'space=s&limit=1')).toMatchObject({ changes: [{ key: 'a' }, { key: 'b' }], version: 1, more: true });
    expect(ctx.errors).toEqual([]);
  });

  it('answers to the server secret only, and is not served without one', async () => {
    const ctx = await fourVersions();
    for (const authorization of [null, '', 'Bearer alice', `Bearer ${SECRET}x`, SECRET]) {
      const refused = await handleRequest(get('space=s&version=1', authorization), ctx);
      expect(refused.status, String(authorization)).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    }
    const unserved = testContext({ changes: {} });
    expect((await handleRequest(get('space=s'), unserved)).status).toBe(404);
    // The handler on its own, as an app mounts it, does as handleRequest does.
    expect((await handleHistory(get('space=s&version=1', null), ctx)).status).toBe(401);
    expect((await handleHistory(get('space=s&version=1'), ctx)).status).toBe(200);
  });

  it('answers 400 for a bad parameter, 410 for a version history does not keep, never 500', async () => {
    const ctx = await fourVersions();
    for (const [query, message] of [
      ['space=s&version=x', /version must be a whole number from 0/],
      ['space=s&version=-1', /version must be a whole number/],
      ['space=s&version=1.5', /version must be a whole number/],
      ['space=s&limit=0', /limit must be a whole number from 1 to 10,000/],
      ['space=s&limit=10001', /limit must be a whole number from 1 to 10,000/],
      ['space=s&version=1&key=a', /key is for a history of changes/],
      ['space=s&key=a&prefix=a', /Give key or prefix, not both/],
      ['space=s&after=a', /after must be a whole number/],
      ['space=s&versoin=1', /history takes no parameter "versoin"/],
      ['space=s&space=t', /space is given twice/],
      [`space=${'x'.repeat(600)}`, /space is longer than/],
    ] as const) {
      const response = await handleRequest(get(query), ctx);
      expect([query, response.status]).toEqual([query, 400]);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
    for (const query of ['space=s&version=5', 'space=s&after=9']) {
      const gone = await handleRequest(get(query), ctx);
      expect([query, gone.status]).toEqual([query, 410]);
      expect(((await gone.json()) as { message: string }).message).toMatch(/is not kept: its history holds versions 0 to 4/);
    }
    // A space whose log was never kept has no history.
    const unlogged = testContext({ changes: { secret: SECRET } });
    await transact(testContext({ storage: unlogged.storage }), 'old', (tx) => tx.set('a', 1));
    expect((await handleRequest(get('space=old&version=1'), unlogged)).status).toBe(410);
    expect(ctx.errors).toEqual([]);
    expect(unlogged.errors).toEqual([]);
  });
});
