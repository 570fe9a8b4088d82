// The inspector's screenshots for the docs: `npx tsx scripts/inspector-screenshots.ts [OUT_DIR]`
// (default docs/inspector/). Serves the test app (test/inspector/app.ts) on a memory store with
// seeded spaces, users, lists and a webhook receiver, pushes a few mutations a second (as
// scripts/inspector-dev.ts does) so the live charts and the feed move, opens Chromium at
// 1280×800, logs in, and writes one PNG per page: login, spaces, space, keys, key, view-as, live,
// feed, history. Needs Chromium at /usr/bin/chromium (scripts/install-chromium.sh).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { handleRequest, memoryStorage } from '../src/index.js';
import { startWebhooks } from '../src/backend.js';
import { inspect, type SpaceDetail } from '../src/ops.js';
import { createListener } from '../adapters/node.js';
import { inspectorApp, pushAs, SECRET, seedAcme } from '../test/inspector/app.js';
import { launchChromium } from '../test/support/chromium.js';

const out = process.argv[2] ?? 'docs/inspector';
mkdirSync(out, { recursive: true });

const receiver = createServer((req, res) => void req.resume().on('end', () => res.writeHead(200).end())).listen(0, '127.0.0.1');
await new Promise((resolve) => receiver.once('listening', resolve));
const ctx = inspectorApp(memoryStorage(), { webhook: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, onAction: () => {} });
const handle = (request: Request) => handleRequest(request, ctx);
const webhooks = startWebhooks(ctx);

await seedAcme(handle);
const restorable = ((await inspect(ctx, 'acme')) as SpaceDetail).version;
await pushAs(handle, 'acme', 'bob', [
  { name: 'put', args: { key: 'list/2/todo/1', value: { title: 'Todo 1 (edited by bob)', done: true } } },
  { name: 'del', args: { key: 'list/2/todo/4' } },
]);
for (let i = 0; i < 12; i++)
  await pushAs(handle, `space-${String(i).padStart(3, '0')}`, 'ann', [{ name: 'put', args: { key: `note/${i}`, value: { text: `Space ${i}` } } }]);

let n = 0;
const traffic = setInterval(() => {
  n++;
  const user = n % 2 ? 'ann' : 'bob';
  // Ticks the live to-dos done and not: short values keep the feed's picture small.
  void pushAs(handle, 'acme', user, [
    { name: 'put', args: { key: `list/${user === 'ann' ? 1 + (n % 2) : 2}/todo/live-${n % 10}`, value: { done: n % 3 === 0 } } },
  ]).catch(console.error);
  // And a pull now and then, so the pulls chart moves too.
  if (n % 3 === 0) void pull(user);
}, 150);

/** A pull of `user` from no cookie, as a new client group's first. */
async function pull(user: string): Promise<void> {
  const body = { pullVersion: 1, clientGroupID: `screenshots-${user}`, cookie: null, profileID: 'p', schemaVersion: '' };
  await (
    await handle(
      new Request('http://localhost/pull?space=acme', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
        body: JSON.stringify(body),
      }),
    )
  ).text();
}

const api = createListener(ctx);
const server = createServer((req, res) => api(req, res)).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const inspector = `http://127.0.0.1:${(server.address() as AddressInfo).port}/_inspect/`;

const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' })).newPage();
  const shot = async (name: string) => {
    // No caret blinking in a field, no hover underline: the same picture each run.
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(out, `${name}.png`), caret: 'hide', animations: 'disabled' });
    console.log(`wrote ${join(out, `${name}.png`)}`);
  };
  const go = async (hash: string, title: string) => {
    await page.evaluate((to) => (location.hash = to), hash);
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
  };

  await page.goto(inspector);
  await shot('login');
  await page.getByLabel('Inspector secret').fill(SECRET);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Spaces' }).waitFor();
  await shot('spaces');
  await go('#/space/acme', 'Space acme');
  await shot('space');
  await go('#/space/acme/keys', 'Keys of acme');
  await shot('keys');
  await go(`#/space/acme/key/${encodeURIComponent('list/2/todo/1')}`, 'Key list/2/todo/1');
  await shot('key');
  await go('#/space/acme/view-as?user=bob', 'View acme as a user');
  await shot('view-as');
  await go('#/space/acme/feed', 'Feed of acme');
  await page.waitForTimeout(2_500);
  await shot('feed');
  await go('#/space/acme/history', 'History of acme');
  const restore = page.getByRole('region', { name: 'Restore' });
  await restore.getByLabel('Restore to version').fill(String(restorable));
  await restore.getByLabel('Only keys starting with').fill('list/2/');
  await restore.getByRole('button', { name: 'Dry run' }).click();
  await restore.getByText(/^Dry run:/).waitFor();
  await shot('history');
  await go('#/live', 'Live');
  // Let the charts gather some seconds of traffic.
  await page.waitForTimeout(8_000);
  await shot('live');
} finally {
  await browser.close();
  clearInterval(traffic);
  await webhooks.stop();
  server.close();
  receiver.close();
}
