/**
 * Runs in workerd (the `workerd` project of vitest.config.ts): a pull and a push make their
 * spans there too, under a provider registered through the same global API a Worker would use.
 */
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, expect, it } from 'vitest';
import { type JSONValue, type SyncContext, handlePull, handlePush, memoryStorage, createContext } from '../../src/index.js';

afterEach(() => trace.disable());

it('a pull and a push in workerd each make their span', async () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));
  const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: { put: (tx, args) => tx.set('k', args as JSONValue) } });
  const post = (path: string, body: unknown) =>
    new Request(`http://localhost${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-replicache-requestid': 'w-1' },
      body: JSON.stringify(body),
    });
  const mutation = { clientID: 'c', id: 1, name: 'put', args: 1, timestamp: 1 };
  expect((await handlePush(post('/push', { pushVersion: 1, clientGroupID: 'g', mutations: [mutation], profileID: 'p', schemaVersion: '' }), ctx)).status).toBe(
    200,
  );
  const pulled = await handlePull(post('/pull', { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' }), ctx);
  expect(await pulled.json()).toMatchObject({ patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 1 }] });
  const spans = exporter.getFinishedSpans().map((span) => [span.name, span.attributes['viewsync.outcome'], span.attributes['viewsync.request_id']]);
  expect(spans).toEqual([
    ['viewsync push', 'ok', 'w-1'],
    ['viewsync pull', 'ok', 'w-1'],
  ]);
});
