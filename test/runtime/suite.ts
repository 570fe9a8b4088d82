/**
 * The HTTP suite every runtime runs against a real server: it checks the wiring (requests in,
 * responses out, bodies, headers, limits, concurrency), not the protocol, which the core's own
 * tests cover once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, RUNTIME_INSPECTOR_SECRET } from './app.js';

export interface RunningServer {
  /** Base URL; the suite calls `<url>pull` and `<url>push`. */
  url: URL;
  stop(): Promise<void>;
}

/**
 * `stops` says the server's `stop()` is the adapter's graceful one (not workerd's, where the
 * platform, not the app, stops a Worker).
 */
export function describeRuntime(name: string, start: () => Promise<RunningServer>, { stops = true } = {}): void {
  describe(`runtime: ${name}`, () => {
    let server: RunningServer;
    beforeAll(async () => {
      server = await start();
    }, 120_000);
    afterAll(() => server?.stop());

    const call = (path: string, init: RequestInit = {}) => fetch(new URL(path, server.url), init);
    const postJSON = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      call(path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: '', ...headers }, body: JSON.stringify(body) });
    const push = (group: string, mutations: unknown[]) =>
      postJSON('push', { pushVersion: 1, clientGroupID: group, mutations, profileID: 'p', schemaVersion: '' });
    const pull = (group: string, cookie: unknown) => postJSON('pull', { pullVersion: 1, clientGroupID: group, cookie, profileID: 'p', schemaVersion: '' });

    it('pushes and pulls: a round trip through the server', async () => {
      const pushed = await push(`${name}-g1`, [
        { clientID: `${name}-c1`, id: 1, name: 'put', args: { key: `${name}/a`, value: { unicode: 'ü🙂' } }, timestamp: 1 },
        { clientID: `${name}-c1`, id: 2, name: 'increment', args: { key: `${name}/n`, delta: 2 }, timestamp: 2 },
      ]);
      expect(pushed.status).toBe(200);
      expect(pushed.headers.get('content-type')).toMatch(/application\/json/);
      expect(await pushed.json()).toEqual({});
      const pulled = await pull(`${name}-g1`, null);
      expect(pulled.status).toBe(200);
      const body = await pulled.json();
      expect(body.lastMutationIDChanges).toEqual({ [`${name}-c1`]: 2 });
      expect(body.patch).toEqual(
        expect.arrayContaining([
          { op: 'put', key: `${name}/a`, value: { unicode: 'ü🙂' } },
          { op: 'put', key: `${name}/n`, value: 2 },
        ]),
      );
      const again = await (await pull(`${name}-g1`, body.cookie)).json();
      expect(again).toEqual({ cookie: body.cookie, lastMutationIDChanges: {}, patch: [] });
    });

    it('narrows pulls to a view, and moves what enters and leaves it', async () => {
      const group = `${name}-viewer`;
      const put = (id: number, key: string, value: unknown) => ({ clientID: `${name}-vw`, id, name: 'put', args: { key, value }, timestamp: id });
      await push(`${name}-vg`, [put(1, `${name}/v/a/1`, 1), put(2, `${name}/v/b/1`, 2), put(3, `views/${group}`, [`${name}/v/a/`])]);
      const first = await (await pull(group, null)).json();
      expect(first.patch).toEqual([{ op: 'clear' }, { op: 'put', key: `${name}/v/a/1`, value: 1 }]);
      await push(`${name}-vg`, [put(4, `views/${group}`, [`${name}/v/b/`])]);
      const moved = await (await pull(group, first.cookie)).json();
      expect(moved.patch).toEqual(
        expect.arrayContaining([
          { op: 'del', key: `${name}/v/a/1` },
          { op: 'put', key: `${name}/v/b/1`, value: 2 },
        ]),
      );
      expect(moved.patch).toHaveLength(2);
      expect(moved.cookie.view).not.toBe(first.cookie.view);
    });

    it('serves concurrent pushes without losing one', async () => {
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          push(`${name}-cg${i}`, [{ clientID: `${name}-cc${i}`, id: 1, name: 'increment', args: { key: `${name}/count`, delta: 1 }, timestamp: 1 }]),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
      const { patch } = await (await pull(`${name}-counter`, null)).json();
      expect(patch).toContainEqual({ op: 'put', key: `${name}/count`, value: 20 });
    });

    it('answers errors with a status and a JSON body', async () => {
      const malformed = await call('pull', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"pullVersion":' });
      expect(malformed.status).toBe(400);
      expect(await malformed.json()).toMatchObject({ error: 'BadRequest' });
      const wrongType = await call('push', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
      expect(wrongType.status).toBe(415);
      const get = await call('pull');
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST, OPTIONS');
      await get.arrayBuffer();
      expect((await postJSON('elsewhere', {})).status).toBe(404);
    });

    it('streams pokes: a push to the space pokes an open stream', async () => {
      const response = await call('poke');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = (await reader.read()).value ?? '';
      expect(text).toMatch(/^retry: /);
      expect(
        (await push(`${name}-poker`, [{ clientID: `${name}-poker`, id: 1, name: 'put', args: { key: `${name}/poked`, value: 1 }, timestamp: 1 }])).status,
      ).toBe(200);
      while (!text.includes('data: poke\n\n')) text += (await reader.read()).value ?? '';
      await reader.cancel();
    });

    it('answers the health check', async () => {
      const response = await call('health');
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true, status: 'ok', storeMs: expect.any(Number) });
    });

    it.runIf(stops)('stops gracefully: a push in flight is answered, a poke stream ends with a reconnect hint, the process exits', async () => {
      const own = await start();
      const poke = await fetch(new URL('poke', own.url));
      const reader = poke.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = (await reader.read()).value ?? '';
      const body = {
        pushVersion: 1,
        clientGroupID: `${name}-stop`,
        profileID: 'p',
        schemaVersion: '',
        mutations: [{ clientID: `${name}-stop`, id: 1, name: 'slowPut', args: { key: 'slow', ms: 700 }, timestamp: 1 }],
      };
      const pushed = fetch(new URL('push', own.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Exits on its own, or `stop` throws: see spawnServer.
      const stopped = own.stop();
      for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value;
      expect(text).toMatch(/\nretry: \d+\n\n$/);
      const answer = await pushed;
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({});
      await stopped;
    });

    it('serves the inspector: its page, a login for a session cookie, its API with the cookie only', async () => {
      const page = await call('_inspect/');
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('name="secret"');
      expect((await call('_inspect/app.js')).headers.get('content-type')).toMatch(/javascript/);
      const origin = server.url.origin;
      const login = await call('_inspect/login', {
        method: 'POST',
        redirect: 'manual',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: `secret=${RUNTIME_INSPECTOR_SECRET}`,
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      await push(`${name}-inspected`, [{ clientID: `${name}-inspected`, id: 1, name: 'put', args: { key: 'seen', value: 1 }, timestamp: 1 }]);
      const api = (path: string, headers: Record<string, string>) => call(`_inspect/api/${path}`, { headers: { 'x-viewsync-inspector': '1', ...headers } });
      expect((await api('spaces', {})).status).toBe(401);
      // The app's one space, as its record says (on workerd, the one the object a request reaches holds).
      const { spaces } = await (await api('spaces', { cookie })).json();
      expect(spaces).toMatchObject([{ space: '', version: expect.any(Number), entries: expect.any(Number) }]);
      expect(spaces[0].entries).toBeGreaterThan(0);
      const live = await (await api('live', { cookie })).json();
      expect(live.seconds.reduce((sum: number, second: { pushes: number }) => sum + second.pushes, 0)).toBeGreaterThan(0);
    });

    it('answers a CORS preflight', async () => {
      const response = await call('push', {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, x-replicache-requestid',
        },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-allow-headers')).toMatch(/x-replicache-requestid/);
    });

    it('refuses a body over the limit with 413, with and without Content-Length', async () => {
      const big = JSON.stringify({ pushVersion: 1, clientGroupID: 'big', profileID: 'p', schemaVersion: '', mutations: [], pad: 'x'.repeat(MAX_BODY_BYTES) });
      const declared = await call('push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
      expect(declared.status).toBe(413);
      expect(await declared.json()).toMatchObject({ error: 'PayloadTooLarge' });
      const bytes = new TextEncoder().encode(big);
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.slice(i, i + 8192));
          controller.close();
        },
      });
      // A server may answer 413 and close before the client has sent the rest (workerd does, now
      // and then): undici then reports the reset of its write rather than the answer.
      const chunked = await call('push', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit).catch((error: { cause?: { code?: string } }) => error);
      if (chunked instanceof Response) expect(chunked.status).toBe(413);
      else expect(chunked.cause?.code).toBe('ECONNRESET');
      // The server is still up and serving after refusing.
      expect((await pull('after-413', null)).status).toBe(200);
    });
  });
}
