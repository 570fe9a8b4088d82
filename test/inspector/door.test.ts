/**
 * The inspector's door, through `handleRequest` as any runtime serves it: where it lives, its
 * login and sessions, what keeps other sites out (the cookie, the API header, same-origin
 * actions), read-only mode, every action told, and clear 4xx answers to bad input.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createContext, handleRequest, memoryStorage, type SyncContext } from '../../src/index.js';
import { read } from '../../src/backend.js';
import type { InspectorAction } from '../../src/ops.js';
import { inspectorApp, pushAs, SECRET } from './app.js';

const ORIGIN = 'http://inspect.test';

/** A context of the test app on a memory store, its told actions and failures kept. */
function app(options: { readOnly?: boolean } = {}) {
  const actions: InspectorAction[] = [];
  const errors: unknown[] = [];
  const ctx = inspectorApp(memoryStorage(), { ...options, onAction: (action) => actions.push(action), onError: (error) => errors.push(error) });
  const handle = (request: Request) => handleRequest(request, ctx);
  return { ctx, handle, actions, errors };
}

function login(handle: (request: Request) => Promise<Response>, secret = SECRET, headers: Record<string, string> = { origin: ORIGIN }) {
  return handle(
    new Request(`${ORIGIN}/api/_inspect/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ secret }),
    }),
  );
}

/** The session cookie a login sets, as a `Cookie` header. */
async function session(handle: (request: Request) => Promise<Response>): Promise<string> {
  const response = await login(handle);
  expect(response.status).toBe(303);
  return response.headers.get('set-cookie')!.split(';')[0]!;
}

function get(
  handle: (request: Request) => Promise<Response>,
  path: string,
  cookie?: string,
  headers: Record<string, string> = { 'x-viewsync-inspector': '1' },
) {
  return handle(new Request(`${ORIGIN}/api/_inspect/api/${path}`, { headers: { ...headers, ...(cookie && { cookie }) } }));
}

function act(handle: (request: Request) => Promise<Response>, path: string, body: unknown, cookie: string, headers: Record<string, string> = {}) {
  return handle(
    new Request(`${ORIGIN}/api/_inspect/api/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-viewsync-inspector': '1', origin: ORIGIN, cookie, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

afterEach(() => void vi.useRealTimers());

describe('where the inspector lives', () => {
  it('is served under any path with an /_inspect segment, and nowhere without the option', async () => {
    const { handle } = app();
    expect((await handle(new Request(`${ORIGIN}/api/_inspect`))).headers.get('location')).toBe('/api/_inspect/');
    const page = await handle(new Request(`${ORIGIN}/api/_inspect/`));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('name="secret"');
    expect((await handle(new Request(`${ORIGIN}/_inspect/app.js`))).headers.get('content-type')).toContain('javascript');
    // The page's files are cached, and asked again each load: 304 while they are the same.
    const js = await handle(new Request(`${ORIGIN}/_inspect/app.js`));
    expect(js.headers.get('cache-control')).toBe('no-cache');
    expect((await handle(new Request(`${ORIGIN}/_inspect/app.js`, { headers: { 'if-none-match': js.headers.get('etag')! } }))).status).toBe(304);
    expect((await handle(new Request(`${ORIGIN}/_inspect/app.js`, { headers: { 'if-none-match': '"other"' } }))).status).toBe(200);
    const head = await handle(new Request(`${ORIGIN}/_inspect/app.css`, { method: 'HEAD' }));
    expect([head.status, head.headers.get('content-type'), await head.text()]).toEqual([200, 'text/css; charset=utf-8', '']);
    // Not a segment of its own: the app's routes as before.
    expect((await handle(new Request(`${ORIGIN}/api/_inspector/`))).status).toBe(404);
    expect((await handle(new Request(`${ORIGIN}/api/x_inspect/`))).status).toBe(404);
    const bare = createContext({ storage: memoryStorage(), mutators: {} });
    expect((await handleRequest(new Request(`${ORIGIN}/api/_inspect/`), bare)).status).toBe(404);
  });

  it('wins over the endpoints its paths end like (…/_inspect/api/history is not the history endpoint)', async () => {
    const { handle } = app();
    const response = await get(handle, 'history');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: expect.stringContaining('"history"') });
  });

  it('answers with no CORS headers, framing refused, a strict CSP and nothing cached', async () => {
    const { handle } = app();
    const response = await handle(new Request(`${ORIGIN}/api/_inspect/`, { headers: { origin: 'https://evil.test' } }));
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });
});

describe('logging in', () => {
  it('trades the secret for an HttpOnly, SameSite=Strict cookie scoped to the inspector, Secure over https', async () => {
    const { handle, actions } = app();
    const response = await login(handle);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/api/_inspect/');
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^viewsync_inspector=\d+\.[\w-]+; Path=\/api\/_inspect\/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    expect(actions.map(({ action, outcome }) => [action, outcome])).toEqual([['login', 'ok']]);
    const secure = await handle(
      new Request('https://inspect.test/_inspect/login', {
        method: 'POST',
        headers: { origin: 'https://inspect.test', 'content-type': 'application/x-www-form-urlencoded' },
        body: `secret=${SECRET}`,
      }),
    );
    expect(secure.headers.get('set-cookie')).toMatch(/; Secure$/);
  });

  it('scopes the cookie to the path it is served under, whatever that path holds', async () => {
    const { handle } = app();
    const response = await handle(
      new Request(`${ORIGIN}/a;Domain=evil.test,b/_inspect/login`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: `secret=${SECRET}`,
      }),
    );
    expect(response.headers.get('set-cookie')).toMatch(/; Path=\/a%3BDomain=evil\.test%2Cb\/_inspect\/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
  });

  it('refuses a wrong secret with the login page again, told as refused, and sets no cookie', async () => {
    const { handle, actions } = app();
    const response = await login(handle, `${SECRET}x`);
    expect(response.status).toBe(401);
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.text()).toContain('role="alert"');
    expect(actions.map(({ action }) => action)).toEqual(['login-refused']);
  });

  it('refuses a login posted from another site', async () => {
    const { handle, actions } = app();
    expect((await login(handle, SECRET, { origin: 'https://evil.test' })).status).toBe(403);
    expect((await login(handle, SECRET, { origin: ORIGIN, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await login(handle, SECRET, {})).status).toBe(403);
    expect(actions).toEqual([]);
  });

  it("never opens with the app users' auth, a forged or an expired cookie", async () => {
    const { handle } = app();
    expect((await get(handle, 'overview', undefined, { 'x-viewsync-inspector': '1', authorization: 'Bearer ann' })).status).toBe(401);
    const cookie = await session(handle);
    expect((await get(handle, 'overview', cookie)).status).toBe(200);
    // Its expiry moved on: the signature no longer holds.
    const [name, value] = cookie.split('=') as [string, string];
    const [expires, mac] = value.split('.') as [string, string];
    expect((await get(handle, 'overview', `${name}=${Number(expires) + 1000}.${mac}`)).status).toBe(401);
    expect((await get(handle, 'overview', `${name}=${expires}.${mac.slice(1)}A`)).status).toBe(401);
    vi.useFakeTimers({ now: Date.now() + 12 * 60 * 60 * 1000 + 1, toFake: ['Date'] });
    expect((await get(handle, 'overview', cookie)).status).toBe(401);
  });

  it('holds a session made by another instance with the same secret, and none made with another', async () => {
    const { handle } = app();
    const cookie = await session(handle);
    const other = app();
    expect((await get(other.handle, 'overview', cookie)).status).toBe(200);
    const stranger = createContext({ storage: memoryStorage(), mutators: {}, inspector: { secret: 'another-inspector-secret-0123456789abcd' } });
    expect((await get((request) => handleRequest(request, stranger), 'overview', cookie)).status).toBe(401);
  });

  it('logs out: the cookie is cleared', async () => {
    const { handle, actions } = app();
    const cookie = await session(handle);
    const response = await handle(new Request(`${ORIGIN}/api/_inspect/logout`, { method: 'POST', headers: { origin: ORIGIN, cookie } }));
    expect(response.status).toBe(303);
    expect(response.headers.get('set-cookie')).toContain('Max-Age=0');
    expect(actions.at(-1)?.action).toBe('logout');
  });

  it('is checked at createContext: a short or published secret is refused', () => {
    expect(() => createContext({ storage: memoryStorage(), mutators: {}, inspector: { secret: 'short' } })).toThrow(
      /inspector.secret must be a string of 32 characters or more/,
    );
    expect(() => createContext({ storage: memoryStorage(), mutators: {}, inspector: { secret: SECRET, readonly: true } as never })).toThrow(/inspector/);
  });
});

describe('the API', () => {
  it('needs the session and its header: a plain link or form from elsewhere gets nothing', async () => {
    const { handle } = app();
    expect((await get(handle, 'overview')).status).toBe(401);
    const cookie = await session(handle);
    expect((await get(handle, 'overview', cookie, {})).status).toBe(403);
    expect(await (await get(handle, 'overview', cookie)).json()).toMatchObject({ readOnly: false, view: true, changes: true, history: true, webhooks: [] });
  });

  it('takes actions only as same-origin JSON POSTs: cross-site, without Origin, or as a form, nothing changes', async () => {
    const { ctx, handle } = app();
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'a', value: 1 } }]);
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'a', value: 2 } }]);
    const cookie = await session(handle);
    const restore = { space: 'acme', to: 1, dryRun: false };
    expect((await act(handle, 'restore', restore, cookie, { origin: 'https://evil.test' })).status).toBe(403);
    expect((await act(handle, 'restore', restore, cookie, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(
      (
        await handle(
          new Request(`${ORIGIN}/_inspect/api/restore`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-viewsync-inspector': '1', cookie },
            body: JSON.stringify(restore),
          }),
        )
      ).status,
    ).toBe(403);
    expect((await act(handle, 'restore', restore, cookie, { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect(await storedValue(ctx, 'acme', 'a')).toBe(2);
    const done = await act(handle, 'restore', restore, cookie);
    expect(done.status).toBe(200);
    expect(await storedValue(ctx, 'acme', 'a')).toBe(1);
  });

  it('in read-only mode, says so and refuses every action, told', async () => {
    const { handle, actions } = app({ readOnly: true });
    const cookie = await session(handle);
    expect(await (await get(handle, 'overview', cookie)).json()).toMatchObject({ readOnly: true });
    const response = await act(handle, 'restore', { space: 'acme', to: 0, dryRun: true }, cookie);
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: expect.stringContaining('read-only') });
    expect(actions.map(({ action }) => action)).toEqual(['login']);
  });

  it('tells every action with what was asked and how it went, a refused one too', async () => {
    const { handle, actions } = app();
    await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'a', value: 1 } }]);
    await pushAs(handle, 'acme', 'mallory', [{ name: 'put', args: { key: 'a', value: 'spam' } }]);
    const cookie = await session(handle);
    const dry = await act(handle, 'revert', { space: 'acme', cause: { userID: 'mallory' }, dryRun: true }, cookie);
    expect(await dry.json()).toMatchObject({ ok: true, result: { dryRun: true, total: 1, changes: [{ key: 'a', before: 'spam', after: 1 }] } });
    expect((await act(handle, 'revert', { space: 'acme', cause: { userID: 'mallory' }, dryRun: false }, cookie)).status).toBe(200);
    expect((await act(handle, 'webhooks/replay', { name: 'nope', space: 'acme', delivery: 'x' }, cookie)).status).toBe(400);
    expect(actions.slice(1).map(({ action, details, outcome }) => [action, details, outcome])).toEqual([
      ['revert', { space: 'acme', cause: { userID: 'mallory' }, onConflict: 'stop', dryRun: true }, 'dry-run'],
      ['revert', { space: 'acme', cause: { userID: 'mallory' }, onConflict: 'stop', dryRun: false }, 'ok'],
      ['webhook-replay', { name: 'nope', space: 'acme', delivery: 'x' }, expect.stringContaining('is not the ID of a delivery of space "acme"')],
    ]);
  });

  it('answers bad input with a 400 naming it, never a 500', async () => {
    const { handle, errors } = app();
    const cookie = await session(handle);
    const long = 'x'.repeat(5000);
    for (const path of [
      'space',
      `space?space=${long}`,
      'keys?space=a&limit=0',
      'keys?space=a&limit=1001',
      'keys?space=a&version=-1',
      'keys?space=a&version=1.5',
      'key?space=a',
      `view-as?space=a&user=${long}`,
      'feed?space=a&after=zz',
    ]) {
      const response = await get(handle, path, cookie);
      expect([400, 404], path).toContain(response.status);
      expect((await response.json()).error, path).toEqual(expect.any(String));
    }
    for (const [path, body] of [
      ['restore', '{'],
      ['restore', '[]'],
      ['restore', { space: 'a' }],
      ['restore', { space: 'a', to: 1, dryRun: 'yes' }],
      ['revert', { space: 'a', cause: {}, dryRun: true }],
      ['revert', { space: 'a', cause: { versions: [1] }, dryRun: true }],
      ['revert', { space: 'a', cause: { userID: 'x' }, onConflict: 'maybe', dryRun: true }],
      ['webhooks/enable', { space: 'a' }],
    ] as const) {
      const response = await act(handle, path, body, cookie);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    expect((await act(handle, 'restore', 'x'.repeat(70_000), cookie)).status).toBe(413);
    expect((await get(handle, 'nothing', cookie)).status).toBe(404);
    // Names every object has are no endpoints: Object itself would be called with the context.
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect((await get(handle, name, cookie)).status, name).toBe(404);
      expect((await act(handle, name, {}, cookie)).status, name).toBe(404);
    }
    expect((await handle(new Request(`${ORIGIN}/_inspect/api/restore`, { headers: { 'x-viewsync-inspector': '1', cookie } }))).status).toBe(405);
    expect(errors).toEqual([]);
  });
});

function storedValue(ctx: SyncContext, space: string, key: string) {
  return read(ctx, space, (tx) => tx.get(key));
}

describe('a store out of reach', () => {
  it('answers 503 with Retry-After, told to no one as a failure, and the page works again once the store is back', async () => {
    const storage = memoryStorage();
    let down = false;
    const flaky: typeof storage = Object.assign(Object.create(storage) as typeof storage, {
      transaction: (fn: never, options: never) =>
        down ? Promise.reject(Object.assign(new Error('socket closed'), { code: 'ECONNRESET' })) : storage.transaction(fn, options),
    });
    const errors: unknown[] = [];
    const ctx = inspectorApp(flaky, { onError: (error) => errors.push(error) });
    const handle = (request: Request) => handleRequest(request, ctx);
    const cookie = await session(handle);
    down = true;
    const response = await get(handle, 'spaces', cookie);
    expect([response.status, response.headers.get('retry-after'), (await response.json()).error]).toEqual([
      503,
      '1',
      expect.stringContaining('unavailable for a moment'),
    ]);
    down = false;
    expect((await get(handle, 'spaces', cookie)).status).toBe(200);
    expect(errors).toEqual([]);
  });
});
