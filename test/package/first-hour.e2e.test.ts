/**
 * A newcomer's `npm start` needs no native build: the demo keeps its todos through node:sqlite,
 * which every supported Node has, and never loads better-sqlite3 (an optional dependency, missing
 * wherever it could not build). Run here as the README says, `npm start`, with better-sqlite3
 * made unloadable by a resolve hook, as on a machine without a compiler.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, type Started, startCommand } from '../support/command.js';
import { ROOT } from './packed.js';

const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
// node:sqlite came in Node 22.5; the machine's Node may be older than the package's floor.
const hasNodeSQLite = major > 22 || (major === 22 && minor >= 5);
if (!hasNodeSQLite) console.log(`Skipped: the demo without better-sqlite3 needs node:sqlite, which Node ${process.version} lacks`);

const folder = mkdtempSync(join(tmpdir(), 'viewsync-first-hour-'));
let server: Started | undefined;
afterAll(async () => {
  await server?.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe.skipIf(!hasNodeSQLite)('npm start with no native build', () => {
  it('serves the demo with its todos in SQLite, better-sqlite3 never loaded', async () => {
    const hook = join(folder, 'no-better-sqlite3.mjs');
    const refuse = `export async function resolve(specifier, context, next) {
      if (specifier === 'better-sqlite3' || specifier.startsWith('better-sqlite3/')) throw Object.assign(new Error('better-sqlite3 is not installed here'), { code: 'ERR_MODULE_NOT_FOUND' });
      return next(specifier, context);
    }`;
    writeFileSync(hook, `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(refuse)}`)});\n`);
    const data = join(folder, 'data');
    server = await startCommand('npm', ['start'], {
      cwd: ROOT,
      env: { PORT: String(await freePort()), DATA_DIR: data, NODE_OPTIONS: `--import=${hook}`, npm_config_update_notifier: 'false' },
      ready: /TodoMVC on viewsync: (\S+)/,
      timeoutMs: 60_000,
    });
    const url = new URL(server.match[1]!);
    expect(server.output()).toContain(`SQLite store: ${join(data, 'todo.db')}`);
    // Nothing that reads as an error: Node 22's ExperimentalWarning for node:sqlite is silenced.
    const printed = server
      .output()
      .split('\n')
      .filter((line) => !line.startsWith('>'));
    expect(printed.filter((line) => /warning|error/i.test(line))).toEqual([]);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('todoapp');
    const pull = await fetch(new URL('api/pull', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' }),
    });
    expect(pull.status, await pull.clone().text()).toBe(200);
    expect(await pull.json()).toMatchObject({ lastMutationIDChanges: {}, patch: expect.any(Array) });
    expect(existsSync(join(data, 'todo.db'))).toBe(true);
  }, 90_000);
});
