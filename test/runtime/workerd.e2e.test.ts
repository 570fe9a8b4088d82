import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerd, type WorkerdServer } from './servers/start-workerd.js';
import { describeCompression } from './compression.js';
import { describeRuntime } from './suite.js';

// The built Cloudflare adapter in real workerd: a Worker routing to a Durable Object per space.
describeRuntime('workerd', startWorkerd, { stops: false });
// Miniflare compresses as Cloudflare's edge does (workerd alone sends what the Worker returns).
describeCompression('workerd', startWorkerd, { chromium: 'gzip' });

describe('runtime: workerd, one Durable Object per space', () => {
  let server: WorkerdServer;
  beforeAll(async () => {
    server = await startWorkerd();
  }, 60_000);
  afterAll(() => server?.stop());

  const post = async (path: string, body: unknown) => {
    const response = await fetch(new URL(path, server.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(response.status).toBe(200);
    return response.json();
  };
  const push = (space: string, value: string) =>
    post(`push?space=${space}`, {
      pushVersion: 1,
      clientGroupID: 'g',
      profileID: 'p',
      schemaVersion: '',
      mutations: [{ clientID: 'c', id: 1, name: 'put', args: { key: 'k', value }, timestamp: 1 }],
    });
  const pull = (space: string) => post(`pull?space=${space}`, { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' });

  it('routes by ?space=: the same client group and key live apart in each space', async () => {
    await push('red', 'in red');
    await push('blue', 'in blue');
    const [red, blue, green] = await Promise.all([pull('red'), pull('blue'), pull('green')]);
    expect(red).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 'in red' }] });
    expect(blue).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 'in blue' }] });
    expect(green).toEqual({ cookie: expect.anything(), lastMutationIDChanges: {}, patch: [{ op: 'clear' }] });
  });
});
