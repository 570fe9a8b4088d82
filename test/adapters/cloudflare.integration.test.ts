import { describe, expect, it } from 'vitest';
import { createWorker, routeToObject } from '../../adapters/cloudflare.js';
import { memoryStorage } from '../../src/index.js';
import { runtimeContext } from '../runtime/context.js';

// The wiring that needs no workerd; test/runtime/workerd.e2e.test.ts runs the rest in workerd.
const pullRequest = (url = 'http://w/pull') =>
  new Request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' }),
  });

describe('createWorker', () => {
  it('serves both endpoints with a context', async () => {
    const response = await createWorker(runtimeContext(memoryStorage())).fetch(pullRequest(), {});
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ patch: [{ op: 'clear' }] });
  });

  it('builds the context from env once per env object', async () => {
    const built: object[] = [];
    const worker = createWorker((env: { name: string }) => (built.push(env), runtimeContext(memoryStorage()).options));
    const [first, second] = [{ name: 'a' }, { name: 'b' }];
    for (const env of [first, first, second, first]) expect((await worker.fetch(pullRequest(), env)).status).toBe(200);
    expect(built).toEqual([first, second]);
  });
});

describe('routeToObject', () => {
  it('sends each request, unchanged, to the object its space names in the bound namespace', async () => {
    const seen: Array<[string, Request]> = [];
    const namespace = {
      idFromName: (name: string) => ({ name }),
      get: (id: unknown) => ({
        fetch: async (request: Request) => (seen.push([(id as { name: string }).name, request]), new Response('from the object')),
      }),
    };
    const worker = routeToObject({ binding: 'SYNC', space: async (request) => new URL(request.url).searchParams.get('space') ?? 'main' });
    const [a, b] = [pullRequest('http://w/pull?space=a'), pullRequest()];
    expect(await (await worker.fetch(a, { SYNC: namespace })).text()).toBe('from the object');
    await worker.fetch(b, { SYNC: namespace });
    expect(seen).toEqual([
      ['a', a],
      ['main', b],
    ]);
  });
});
