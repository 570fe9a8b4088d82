import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { mutation, post, pullBody, pushBody } from '../helpers.js';

const root = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(root, 'node_modules', '.viewsync-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('the README quick-start example runs as printed', async () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const example = /```ts\n(import [^]*?)```/.exec(readme)![1]!;
  expect(example.split('\n').filter(Boolean).length).toBeLessThanOrEqual(12);
  const file = join(dir, 'example.ts');
  writeFileSync(file, example.replace(`from 'viewsync'`, `from ${JSON.stringify(join(root, 'src/index.ts'))}`));
  const app = (await import(pathToFileURL(file).href)).default as { fetch: (r: Request) => Promise<Response> };

  await app.fetch(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'hello', value: 'world' })])));
  const pulled = await (await app.fetch(post('/pull', pullBody('g', null)))).json();
  expect(pulled.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'hello', value: 'world' }]);
});
