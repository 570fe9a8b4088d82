/**
 * Poke tokens: a browser's EventSource cannot send an Authorization header, so an app had to
 * special-case `/poke` in `authenticate`. The server makes a short-lived signed token for the
 * user `authenticate` names (`GET …/poke-token`), and `…/poke?poke_token=` opens that user's
 * stream with it.
 */
import { describe, expect, it } from 'vitest';
import { createContext, handleRequest, memoryStorage, pokeToken, type SyncOptions } from '../../src/index.js';
import { mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { EventReader } from './sse.js';

const SECRET = 'a test secret, long enough to sign with';

/** Users by bearer token; the space is the `space` parameter, which only its owner may open. */
function app(overrides: Partial<SyncOptions> = {}) {
  let now = 1_000_000;
  const spacesSeen: Array<[string | undefined, string]> = [];
  const ctx = createContext({
    storage: memoryStorage(),
    mutators: testMutators,
    authenticate: (request) => ({ 'Bearer alice': 'alice', 'Bearer bob': 'bob' })[request.headers.get('authorization') ?? ''] ?? null,
    space: (request, userID) => {
      const space = new URL(request.url).searchParams.get('space') ?? `home-${userID}`;
      spacesSeen.push([userID, space]);
      return space;
    },
    pokes: { tokenSecret: SECRET, tokenTtlMs: 60_000 },
    clock: () => now,
    ...overrides,
  });
  return { ctx, spacesSeen, advance: (ms: number) => (now += ms) };
}

const get = (path: string, auth?: string) => new Request(`http://localhost/sync/${path}`, { headers: auth === undefined ? {} : { authorization: auth } });

async function tokenFor(ctx: ReturnType<typeof app>['ctx'], auth: string, ttlMs = 60_000): Promise<string> {
  const response = await handleRequest(get('poke-token', auth), ctx);
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { token: string; expiresAt: number };
  expect(body.expiresAt).toBe(1_000_000 + ttlMs);
  return body.token;
}

describe('poke tokens', () => {
  it('GET …/poke-token gives the authenticated user a token, and …/poke?poke_token= opens that user’s stream with no Authorization header; a push pokes it', async () => {
    const { ctx, spacesSeen } = app();
    const token = await tokenFor(ctx, 'Bearer alice');
    const stream = await handleRequest(get(`poke?poke_token=${encodeURIComponent(token)}`), ctx);
    expect(stream.status).toBe(200);
    // The space is resolved for the token's user, as for a request carrying the header.
    expect(spacesSeen.at(-1)).toEqual(['alice', 'home-alice']);
    const reader = new EventReader(stream.body!);
    await reader.until(() => reader.otherMessages.includes('data: open'));
    const pushed = await handleRequest(
      post('/sync/push?space=home-alice', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]), { authorization: 'Bearer alice' }),
      ctx,
    );
    expect(pushed.status).toBe(200);
    await reader.until(() => reader.pokes === 1);
    await reader.cancel();
  });

  it('a token is refused (401, saying why) once expired, altered, made with another secret, or not a token at all; nothing is opened', async () => {
    const { ctx, advance } = app();
    const token = await tokenFor(ctx, 'Bearer alice');
    const other = app({ pokes: { tokenSecret: `${SECRET}, another` } });
    const foreign = await tokenFor(other.ctx, 'Bearer alice', 60 * 60 * 1000);
    const [payload, signature] = token.split('.') as [string, string];
    const asBob = `${Buffer.from(JSON.stringify(['bob', 9e15])).toString('base64url')}.${signature}`;
    const flipped = `${payload}.${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    for (const [bad, why] of [
      [foreign, /is not one of this server/],
      [asBob, /is not one of this server/],
      [flipped, /is not one of this server/],
      [`${payload}.${signature.slice(0, -2)}`, /is not one of this server/],
      [`${'x'.repeat(5_000)}.${signature}`, /is not one of this server/],
      [`${payload}.${signature}.${signature}`, /is not one of this server/],
      ['', /is not one of this server/],
      ['no-dot-at-all', /is not one of this server/],
      ['a.b', /is not one of this server/],
      ['x'.repeat(100_000), /is not one of this server/],
    ] as const) {
      const response = await handleRequest(get(`poke?poke_token=${encodeURIComponent(bad)}`), ctx);
      expect(response.status, bad.slice(0, 40)).toBe(401);
      expect(((await response.json()) as { message: string }).message).toMatch(why);
    }
    advance(60_000);
    const expired = await handleRequest(get(`poke?poke_token=${encodeURIComponent(token)}`), ctx);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { message: string }).message).toMatch(/has expired: ask for a new one/);
  });

  it('a token opens poke streams only: a pull or a push with it and no Authorization header is a 401', async () => {
    const { ctx } = app();
    const token = await tokenFor(ctx, 'Bearer alice');
    const push = await handleRequest(
      post(`/sync/push?poke_token=${encodeURIComponent(token)}`, pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])),
      ctx,
    );
    expect(push.status).toBe(401);
    const pull = await handleRequest(post(`/sync/pull?poke_token=${encodeURIComponent(token)}`, pullBody('g', null)), ctx);
    expect(pull.status).toBe(401);
  });

  it('what a token signs is labelled: an HMAC of the bare payload with the same secret is no token', async () => {
    const { ctx } = app();
    const payload = Buffer.from(JSON.stringify(['bob', 9e15])).toString('base64url');
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(SECRET), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const bare = Buffer.from(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(payload))).toString('base64url');
    expect((await handleRequest(get(`poke?poke_token=${payload}.${bare}`), ctx)).status).toBe(401);
  });

  it('a user ID too long for a token is said at pokeToken, not refused later without a word', async () => {
    const { ctx } = app();
    await expect(pokeToken(ctx, 'u'.repeat(4_000))).rejects.toThrow(/user ID is too long for a poke token/);
    await expect(pokeToken(createContext({ storage: memoryStorage(), mutators: testMutators, pokes: false }), 'u')).rejects.toThrow(/pokes are off/);
  });

  it('GET …/poke-token needs the user: 401 without Authorization; 404 without tokenSecret, or without authenticate', async () => {
    const { ctx } = app();
    expect((await handleRequest(get('poke-token'), ctx)).status).toBe(401);
    expect((await handleRequest(get('poke-token', 'Bearer alice'), app({ pokes: {} }).ctx)).status).toBe(404);
    const anonymous = createContext({ storage: memoryStorage(), mutators: testMutators, pokes: { tokenSecret: SECRET } });
    const response = await handleRequest(get('poke-token'), anonymous);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { message: string }).message).toMatch(/need authenticate/);
  });

  it('without tokenSecret, a poke_token parameter is the app’s own business: authenticate decides, as before', async () => {
    const { ctx } = app({ pokes: {} });
    expect((await handleRequest(get('poke?poke_token=anything'), ctx)).status).toBe(401);
    const stream = await handleRequest(get('poke?poke_token=anything', 'Bearer bob'), ctx);
    expect(stream.status).toBe(200);
    await stream.body!.cancel();
  });

  it('pokeToken makes one in an endpoint of the app’s own; it needs tokenSecret, said at the call', async () => {
    const { ctx } = app();
    const { token } = await pokeToken(ctx, 'bob');
    const stream = await handleRequest(get(`poke?poke_token=${encodeURIComponent(token)}`), ctx);
    expect(stream.status).toBe(200);
    await stream.body!.cancel();
    await expect(pokeToken(app({ pokes: {} }).ctx, 'bob')).rejects.toThrow(/set pokes.tokenSecret \(32 characters or more/);
  });

  it('the options are checked when the context is made', () => {
    expect(() => app({ pokes: { tokenSecret: 'short' } })).toThrow(/pokes.tokenSecret.*32 characters or more/);
    expect(() => app({ pokes: { tokenSecret: SECRET, tokenTtlMs: -1 } })).toThrow(/pokes.tokenTtlMs.*milliseconds above 0/);
  });
});
