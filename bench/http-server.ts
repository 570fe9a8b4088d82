/**
 * One server for the HTTP benchmark, run in its own process so it does not share a core with
 * the load generator: `node --import tsx bench/http-server.ts <bare|viewsync|hono>`.
 * Prints one JSON line, `{port, pull}`: the port and an up-to-date pull body to send.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { SyncContext } from '../src/index.js';

// The built package, as users run it (and as the Deno and Bun servers load it); `npm run build` first.
const dist = (file: string) => new URL(`../dist/${file}`, import.meta.url).href;
// The context too: a context is known only to the module instance that made it.
const { createContext, handlePush, handleRequest, memoryStorage } = (await import(dist('index.js'))) as typeof import('../src/index.js');
const { createListener } = (await import(dist('node.js'))) as typeof import('../adapters/node.js');

const kind = process.argv[2];
const ctx: SyncContext = createContext({
  storage: memoryStorage(),
  mutators: { put: (tx, { key, value }: { key: string; value: number }) => tx.set(key, value) },
});

// Some data and an up-to-date cookie, so the measured pull is the common case: nothing changed.
const mutations = Array.from({ length: 100 }, (_, i) => ({ clientID: 'c', id: i + 1, name: 'put', args: { key: `k${i}`, value: i }, timestamp: 0 }));
const json = { 'content-type': 'application/json' };
await handlePush(
  new Request('http://x/push', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ pushVersion: 1, clientGroupID: 'g', mutations, profileID: 'p', schemaVersion: '' }),
  }),
  ctx,
);
const probe = { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' };
const { cookie } = await (await handleRequest(new Request('http://x/pull', { method: 'POST', headers: json, body: JSON.stringify(probe) }), ctx)).json();
const pull = { ...probe, cookie };

const listeners = {
  viewsync: createListener(ctx),
  hono: getRequestListener((request) => handleRequest(request, ctx)),
  // The floor: read the body, parse it, answer an empty patch with its cookie. No protocol.
  bare: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, json).end(JSON.stringify({ cookie: body.cookie, lastMutationIDChanges: {}, patch: [] }));
    });
  },
};
const listener = listeners[kind as keyof typeof listeners];
if (!listener) throw new Error(`Unknown server kind ${kind}; use bare, viewsync or hono`);
const server = createServer(listener).listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port, pull }));
});
process.once('SIGINT', () => server.close(() => process.exit(0)));
