/**
 * A client as many apps write it, with the browser's `EventSource` (undici's, which follows the
 * same standard) and a pull on every message, nothing else: no periodic pulls, no pull of its
 * own on reconnect. Such apps rely on their server to send a message when a stream opens; a
 * stream that opened with comments only left an edit pushed while the stream was away (a server
 * restart) unseen until the next periodic pull, up to a minute later.
 */
import { EventSource } from 'undici';
import { afterEach, expect, test } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { createContext, memoryStorage, type Storage } from '../../src/index.js';
import type { JSONValue } from '../../src/protocol.js';
import { mutation, pullBody, pushBody, testMutators } from '../support/helpers.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function start(storage: Storage, port = 0): Promise<SyncServer> {
  const server = await serve(createContext({ storage, mutators: testMutators }), { port });
  cleanup.push(() => server.stop());
  return server;
}

/** An app's client: its view of key `k`, pulled on every message of its EventSource. */
function onMessageClient(url: URL) {
  const state = { cookie: null as JSONValue, value: undefined as JSONValue | undefined, pulls: 0, messages: [] as string[] };
  const pull = async () => {
    state.pulls++;
    const response = await post(new URL('pull', url), pullBody('reader', state.cookie));
    if (response.status !== 200) return;
    const body = (await response.json()) as { cookie: JSONValue; patch: Array<{ op: string; key?: string; value?: JSONValue }> };
    for (const op of body.patch) if (op.op === 'put' && op.key === 'k') state.value = op.value;
    state.cookie = body.cookie;
  };
  const source = new EventSource(new URL('poke', url));
  source.onmessage = (event) => {
    state.messages.push(String(event.data));
    void pull().catch(() => {});
  };
  cleanup.push(() => source.close());
  return { state, source };
}

/**
 * A POST, sent again on a network error: a kept-alive socket to the stopped server fails the
 * first request that tries it (browsers send again then; fetch in Node does not, for a POST).
 */
async function post(url: URL, body: unknown): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

let id = 0;
async function put(url: URL, value: number): Promise<void> {
  const response = await post(new URL('push', url), pushBody('writer', [mutation('w', ++id, 'put', { key: 'k', value })]));
  expect(response.status).toBe(200);
}

async function until(test: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a client that pulls only on EventSource messages sees an edit pushed right after a server restart, before its stream is back (the stream says `open`)', async () => {
  const storage = memoryStorage();
  const first = await start(storage);
  const { state, source } = onMessageClient(first.url);
  await until(() => state.messages.length === 1);
  expect(state.messages).toEqual(['open']);
  await put(first.url, 1);
  await until(() => state.value === 1);

  // The server restarts on the same port and store; an edit lands at once, while the client's
  // stream is still away (EventSource waits `retry` before it reconnects): no stream hears its poke.
  await first.stop();
  const second = await start(storage, first.port);
  const pushed = performance.now();
  await put(second.url, 2);
  expect(source.readyState).not.toBe(EventSource.OPEN);

  await until(() => state.value === 2);
  const seenAfterMs = performance.now() - pushed;
  console.log(`edit pushed right after a restart, seen by an onmessage-only client ${Math.round(seenAfterMs)} ms later`);
  // Its stream said `open` when it came back, and nothing else: no poke told it of the edit.
  expect(state.messages).toEqual(['open', 'poke', 'open']);
  // The stream is back within the drain's retry (at most 1 s); the bound here only catches a hang.
  expect(seenAfterMs).toBeLessThan(10_000);
}, 30_000);

test('an EventSource, which cannot send an Authorization header, opens its user’s stream with a poke token the server made', async () => {
  const ctx = createContext({
    storage: memoryStorage(),
    mutators: testMutators,
    authenticate: (request) => (request.headers.get('authorization') === 'Bearer alice' ? 'alice' : null),
    pokes: { tokenSecret: 'a secret of thirty-two characters or more' },
  });
  const server = await serve(ctx, { port: 0 });
  cleanup.push(() => server.stop());
  const refused = new EventSource(new URL('poke', server.url));
  cleanup.push(() => refused.close());
  const issued = await fetch(new URL('poke-token', server.url), { headers: { authorization: 'Bearer alice' } });
  const { token } = (await issued.json()) as { token: string };
  const source = new EventSource(new URL(`poke?poke_token=${encodeURIComponent(token)}`, server.url));
  cleanup.push(() => source.close());
  const messages: string[] = [];
  source.onmessage = (event) => messages.push(String(event.data));
  await until(() => messages.includes('open'));
  // Without the token: a 401, which ends an EventSource for good.
  await until(() => refused.readyState === EventSource.CLOSED);
  const pushed = await fetch(new URL('push', server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer alice' },
    body: JSON.stringify(pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])),
  });
  expect(pushed.status).toBe(200);
  await until(() => messages.includes('poke'));
});
