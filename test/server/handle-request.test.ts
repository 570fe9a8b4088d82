import { describe, expect, it } from 'vitest';
import { handleRequest } from '../../src/index.js';
import { mutation, post, pullBody, pushBody, testContext } from '../support/helpers.js';

const ORIGIN = { origin: 'https://app.example' };

describe('handleRequest', () => {
  it('routes POST to paths ending in /pull and /push', async () => {
    const ctx = testContext();
    const pushed = await handleRequest(post('/api/sync/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])), ctx);
    expect(pushed.status).toBe(200);
    expect(await pushed.json()).toEqual({});
    const pulled = await handleRequest(post('/api/sync/pull?x=1', pullBody('g', null)), ctx);
    expect(await pulled.json()).toMatchObject({ patch: [{ op: 'clear' }, { op: 'put', key: 'a', value: 1 }] });
  });

  it('answers 404 elsewhere and 405 with Allow for other methods', async () => {
    const ctx = testContext();
    const missing = await handleRequest(post('/pulls', pullBody('g', null)), ctx);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'NotFound' });
    const wrong = await handleRequest(new Request('http://localhost/pull'), ctx);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST, OPTIONS');
  });

  it('answers a CORS preflight allowing the headers the client sends', async () => {
    const ctx = testContext();
    const response = await handleRequest(
      new Request('http://localhost/pull', { method: 'OPTIONS', headers: { ...ORIGIN, 'access-control-request-method': 'POST' } }),
      ctx,
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
    const allowed = response.headers.get('access-control-allow-headers')!.split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-replicache-requestid', 'x-sync-requestid']));
  });

  it('adds CORS headers to actual responses, errors included', async () => {
    const ctx = testContext();
    const ok = await handleRequest(post('/pull', pullBody('g', null), ORIGIN), ctx);
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    const bad = await handleRequest(post('/pull', '{', ORIGIN), ctx);
    expect(bad.status).toBe(400);
    expect(bad.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('limits origins when configured', async () => {
    for (const origin of [['https://app.example'], (o: string) => o.endsWith('.example')] as const) {
      const ctx = testContext({ cors: { origin } });
      const preflight = (from: string) => handleRequest(new Request('http://localhost/push', { method: 'OPTIONS', headers: { origin: from } }), ctx);
      const allowed = await preflight('https://app.example');
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(allowed.headers.get('vary')).toBe('origin');
      expect((await preflight('https://evil.test')).status).toBe(403);
      const response = await handleRequest(post('/pull', pullBody('g', null), { origin: 'https://evil.test' }), ctx);
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it('sends no CORS headers when CORS is off', async () => {
    const ctx = testContext({ cors: false });
    const response = await handleRequest(post('/pull', pullBody('g', null), ORIGIN), ctx);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect((await handleRequest(new Request('http://localhost/pull', { method: 'OPTIONS', headers: ORIGIN }), ctx)).status).toBe(405);
  });

  it('accepts requests with no request-ID header and with either spelling of it', async () => {
    const ctx = testContext();
    for (const headers of [{}, { 'x-replicache-requestid': 'c-s-0' }, { 'x-sync-requestid': 'c-s-0' }] as Array<Record<string, string>>) {
      expect((await handleRequest(post('/pull', pullBody('g', null), headers), ctx)).status).toBe(200);
    }
  });
});
