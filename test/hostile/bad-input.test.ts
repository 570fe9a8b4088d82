import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, type SyncOptions } from '../../src/index.js';
import { mutation, post, pull, pullBody, push, pushBody, testContext } from '../support/helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };

const endpoints = [
  ['pull', handlePull, pullBody('g', null)],
  ['push', handlePush, pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])],
] as const;

/** A context with data in it, and a function that tells whether anything changed since. */
async function seeded(overrides: Partial<SyncOptions> = {}) {
  const ctx = testContext(overrides);
  await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'seed', value: 1 })]);
  const before = await pull(ctx, 'g', null);
  return { ctx, unchanged: async () => expect(await pull(ctx, 'g', null)).toEqual(before) };
}

describe.each(endpoints)('bad input on the %s endpoint changes nothing and is never a 500', (_, handler, valid) => {
  it.each(['GET', 'PUT', 'DELETE', 'PATCH'])('%s gets 405 with Allow: POST', async (method) => {
    const { ctx, unchanged } = await seeded();
    const response = await handler(new Request('http://localhost/x', { method, ...(method !== 'GET' && { body: JSON.stringify(valid) }) }), ctx);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toMatchObject({ error: 'MethodNotAllowed', message: expect.stringContaining(method) });
    await unchanged();
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])('content type %s gets 415', async (type) => {
    const { ctx, unchanged } = await seeded();
    const response = await handler(post('/x', valid, { 'content-type': type }), ctx);
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ error: 'UnsupportedMediaType' });
    await unchanged();
  });

  it.each(['application/json; charset=utf-8', 'Application/JSON', 'application/vnd.api+json'])('content type %s is accepted', async (type) => {
    const { ctx } = await seeded();
    expect((await handler(post('/x', valid, { 'content-type': type }), ctx)).status).toBe(200);
  });

  it.each([
    ['not JSON', '{"pullVersion":', /not valid JSON/],
    ['empty', '', /empty/],
    ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), /UTF-8/],
  ])('a body that is %s gets 400', async (_, body, message) => {
    const { ctx, unchanged } = await seeded();
    const response = await handler(new Request('http://localhost/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), ctx);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'BadRequest', message: expect.stringMatching(message) });
    await unchanged();
  });

  it('a body over the limit gets 413, by Content-Length and while streaming', async () => {
    const { ctx, unchanged } = await seeded({ limits: { bodyBytes: 200 } });
    const big = { ...valid, padding: 'x'.repeat(500) };
    const declared = await handler(post('/x', big), ctx);
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ error: 'PayloadTooLarge', message: expect.stringContaining('200 bytes') });
    const bytes = new TextEncoder().encode(JSON.stringify(big));
    const stream = new ReadableStream({ start: (c) => (c.enqueue(bytes.slice(0, 100)), c.enqueue(bytes.slice(100)), c.close()) });
    const streamed = await handler(new Request('http://localhost/x', { method: 'POST', headers: JSON_TYPE, body: stream, duplex: 'half' } as RequestInit), ctx);
    expect(streamed.status).toBe(413);
    await unchanged();
  });
});

describe('bad input: a body that breaks the schema gets 400 naming the field', () => {
  it.each([
    ['pull', handlePull, { ...pullBody('g', null), clientGroupID: 42 }, 'clientGroupID'],
    ['pull', handlePull, { pullVersion: 1, cookie: null, profileID: 'p', schemaVersion: '' }, 'clientGroupID'],
    ['pull v0', handlePull, { pullVersion: 0, clientID: 'c', cookie: null, lastMutationID: -1, profileID: 'p', schemaVersion: '' }, 'lastMutationID'],
    ['push', handlePush, pushBody('g', [{ ...mutation('c', 1, 'put', {}), id: 1.5 }]), 'mutations.0.id'],
    ['push', handlePush, pushBody('g', [mutation('c', 1, 'put', {}), { ...mutation('c', 2, 'put', {}), name: null as never }]), 'mutations.1.name'],
    ['push', handlePush, { ...pushBody('g', []), mutations: 'nope' }, 'mutations'],
    ['push', handlePush, [1, 2, 3], ''],
  ] as const)('%s: %j names %s', async (_, handler, body, path) => {
    const ctx = testContext();
    const response = await handler(post('/x', body), ctx);
    expect(response.status).toBe(400);
    const json = await response.json();
    expect(json).toMatchObject({ error: 'BadRequest', message: expect.any(String), issues: expect.any(Array) });
    expect(json.issues[0]).toEqual({ path, message: expect.any(String) });
    if (path) expect(json.message).toContain(path);
  });

  it('a push with one bad mutation applies none of them', async () => {
    const { ctx, unchanged } = await seeded();
    const body = pushBody('g', [mutation('c', 2, 'put', { key: 'a', value: 1 }), { ...mutation('c', 3, 'put', {}), id: 'three' as never }]);
    expect((await handlePush(post('/push', body), ctx)).status).toBe(400);
    await unchanged();
  });

  it('pushVersion other than 1 gets VersionNotSupported (push) with status 200 and changes nothing', async () => {
    const { ctx, unchanged } = await seeded();
    const response = await handlePush(post('/push', { ...pushBody('g', [mutation('c', 2, 'put', { key: 'a', value: 2 })]), pushVersion: 2 }), ctx);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ error: 'VersionNotSupported', versionType: 'push' });
    await unchanged();
  });

  it('an unaccepted schemaVersion on push gets VersionNotSupported (schema) and changes nothing', async () => {
    const { ctx, unchanged } = await seeded({ schemaVersion: '' });
    const response = await handlePush(post('/push', pushBody('g', [mutation('c', 2, 'put', { key: 'a', value: 2 })], { schemaVersion: 'old' })), ctx);
    expect(await response.json()).toEqual({ error: 'VersionNotSupported', versionType: 'schema' });
    await unchanged();
  });
});

it('the default body limit is generous: a real 1,000-mutation push with 10 KB args fits', async () => {
  const ctx = testContext();
  const mutations = Array.from({ length: 1000 }, (_, i) => mutation('c', i + 1, 'put', { key: `k${i}`, value: 'x'.repeat(10_000) }));
  await push(ctx, 'g', mutations);
  expect((await pull(ctx, 'g', null)).lastMutationIDChanges).toEqual({ c: 1000 });
});
