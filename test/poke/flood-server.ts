// The server the poke flood test attacks, as a user deploys one: the Node adapter with every
// poke option at its default, users named by the Authorization header. Prints {"url", "pid"}.
// GET /heap (run with --expose-gc) collects garbage and answers the bytes the heap still holds.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createListener } from '../../adapters/node.js';
import { memoryStorage, createContext } from '../../src/index.js';

const listener = createListener(
  createContext({
    storage: memoryStorage(),
    mutators: { put: async (tx, args) => void (await tx.set('k', args ?? null)) },
    authenticate: (request) => request.headers.get('authorization') || null,
  }),
);
const server = createServer((req, res) => {
  if (req.url !== '/heap') return listener(req, res);
  (globalThis as { gc?: () => void }).gc?.();
  res.end(String(process.memoryUsage().heapUsed));
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, pid: process.pid }));
});
