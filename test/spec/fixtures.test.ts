import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { handleRequest } from '../../src/index.js';
import { testContext } from '../support/helpers.js';

/** Real requests captured from replicache@15.3.0, with the answers of a conforming server. */
const fixtures = JSON.parse(readFileSync(fileURLToPath(new URL('../fixtures/real-client-requests.json', import.meta.url)), 'utf8'));

function replay(name: string): Request {
  const { request } = fixtures[name];
  return new Request(`http://127.0.0.1:8791${request.url}`, { method: request.method, headers: request.headers, body: request.rawBody });
}

describe('real captured client requests', () => {
  it('the first pull (null cookie) gets an empty reset', async () => {
    const response = await handleRequest(replay('pullInitial'), testContext());
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ cookie: { order: 0 }, lastMutationIDChanges: {}, patch: [{ op: 'clear' }] });
  });

  it('the real push applies, and a pull then gives the same view and lastMutationID as the captured answer', async () => {
    const ctx = testContext();
    const pushed = await handleRequest(replay('push'), ctx);
    expect(pushed.status).toBe(200);
    expect(ctx.errors).toEqual([]);

    const pulled = await handleRequest(replay('pullWithCookie'), ctx);
    expect(pulled.status).toBe(200);
    const body = await pulled.json();
    const expected = fixtures.pullWithCookie.response.body;
    expect(body.lastMutationIDChanges).toEqual(expected.lastMutationIDChanges);
    // The fixture's server used numeric cookies; ours are objects, so the captured cookie 0 is
    // foreign and ordered below ours: a full reset. Applied, both answers give the same view.
    const view = (patch: Array<{ op: string; key?: string; value?: unknown }>) => {
      const map = new Map<string, unknown>();
      for (const op of patch) op.op === 'clear' ? map.clear() : op.op === 'put' ? map.set(op.key!, op.value) : map.delete(op.key!);
      return map;
    };
    expect(view(body.patch)).toEqual(view(expected.patch));
    expect(body.cookie).toMatchObject({ order: expect.any(Number), epoch: expect.any(String) });
  });

  it('replaying the same push changes nothing: every mutation is at or below lastMutationID', async () => {
    const ctx = testContext();
    await handleRequest(replay('push'), ctx);
    const before = await (await handleRequest(replay('pullInitial'), ctx)).json();
    expect((await handleRequest(replay('push'), ctx)).status).toBe(200);
    expect(await (await handleRequest(replay('pullInitial'), ctx)).json()).toEqual(before);
  });
});
