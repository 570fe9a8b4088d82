// A server to look at the inspector with: `npx tsx scripts/inspector-dev.ts [--sqlite FILE] [--port N]`.
// Serves the test app (test/inspector/app.ts) on a memory store (or a SQLite file), seeds spaces,
// users, lists and a webhook receiver, and keeps pushing a few mutations a second so the live
// charts and the feed move. Prints the inspector's URL and secret.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openSQLite } from '../test/support/sqlite-driver.js';
import { handleRequest, memoryStorage } from '../src/index.js';
import { startWebhooks } from '../src/backend.js';
import { createListener } from '../adapters/node.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import { inspectorApp, pushAs, SECRET, seedAcme } from '../test/inspector/app.js';

const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const file = flag('--sqlite');
const storage = file === undefined ? memoryStorage() : sqliteStorage(openSQLite(file));
const received: unknown[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req
    .on('data', (chunk) => (body += chunk))
    .on('end', () => {
      received.push(JSON.parse(body));
      res.writeHead(200).end();
    });
}).listen(0, '127.0.0.1');
await new Promise((resolve) => receiver.once('listening', resolve));
const ctx = inspectorApp(storage, { webhook: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` });
const handle = (request: Request) => handleRequest(request, ctx);
const webhooks = startWebhooks(ctx);

await seedAcme(handle);
for (let i = 0; i < 40; i++)
  await pushAs(handle, `space-${String(i).padStart(3, '0')}`, 'ann', [{ name: 'put', args: { key: `note/${i}`, value: { text: `Space ${i}` } } }]);

let n = 0;
const traffic = setInterval(() => {
  n++;
  void pushAs(handle, 'acme', n % 2 ? 'ann' : 'bob', [
    { name: 'put', args: { key: `list/${1 + (n % 3)}/todo/live-${n % 50}`, value: { title: `Live ${n}`, done: false } } },
  ]).catch(console.error);
}, 300);

const api = createListener(ctx);
const server = createServer((req, res) => api(req, res)).listen(Number(flag('--port') ?? 0), '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;
console.log(`inspector: http://127.0.0.1:${port}/_inspect/  secret: ${SECRET}`);
process.on('SIGINT', () => {
  clearInterval(traffic);
  void webhooks.stop?.();
  server.close();
  receiver.close();
  process.exit(0);
});
