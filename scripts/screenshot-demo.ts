// Makes docs/demo.png, the README's picture of the demo: two browser contexts (two client groups)
// side by side, after edits on each. `npx tsx scripts/screenshot-demo.ts`; needs /usr/bin/chromium.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { addTodo, item, openTodoPage, startDemo } from '../test/demo/todo-app.js';

const server = await startDemo(0, mkdtempSync(join(tmpdir(), 'viewsync-shot-')));
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
try {
  const [a, b] = [await openTodoPage(browser, server.url, 'a', [], () => false), await openTodoPage(browser, server.url, 'b', [], () => false)];
  for (const text of ['Buy oat milk', 'Walk the dog', 'Ship the release']) await addTodo(a, text);
  await item(b, 'Walk the dog').waitFor();
  await item(b, 'Walk the dog').locator('.toggle').check();
  await addTodo(b, 'Answer the review');
  await item(a, 'Answer the review').waitFor();
  await a.locator('.todo-list li.completed').waitFor();
  const shots = [
    await a.screenshot({ clip: { x: 100, y: 0, width: 600, height: 480 } }),
    await b.screenshot({ clip: { x: 100, y: 0, width: 600, height: 480 } }),
  ];
  const page = await (await browser.newContext({ viewport: { width: 1240, height: 520 } })).newPage();
  const figure = (png: Buffer, label: string) =>
    `<figure><figcaption>${label}</figcaption><img src="data:image/png;base64,${png.toString('base64')}"></figure>`;
  await page.setContent(
    `<style>body{margin:0;display:flex;gap:20px;padding:10px;background:#ddd;font:14px sans-serif}figure{margin:0}figcaption{padding:4px}</style>${figure(shots[0]!, 'Browser A')}${figure(shots[1]!, 'Browser B: a second client group, in sync')}`,
  );
  mkdirSync('docs', { recursive: true });
  writeFileSync('docs/demo.png', await page.screenshot());
} finally {
  await browser.close();
  await server.stop();
}
