import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { mutation, pullBody, pushAndPull, pushBody } from '../support/helpers.js';
import { ROOT, userProject } from '../package/packed.js';

// Every example in examples/ starts as its comment says and serves a push and a pull.
const running: Started[] = [];
const folders: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.stop()));
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const tempFolder = () => {
  const folder = mkdtempSync(join(tmpdir(), 'viewsync-todo-'));
  folders.push(folder);
  return folder;
};

const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

async function until(done: () => boolean, ms = 5_000): Promise<void> {
  for (const deadline = Date.now() + ms; !done(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() > deadline) throw new Error(`Not so after ${ms} ms`);
  }
}

async function start(command: string, args: string[], ready: RegExp, cwd = ROOT, env: Record<string, string> = {}): Promise<Started> {
  const started = await startCommand(command, args, { cwd, env, ready, timeoutMs: 60_000 });
  running.push(started);
  return started;
}

describe('examples', () => {
  it('npm start: the TodoMVC demo serves its page, and the sync endpoints under /api/, on PORT with SQLite in DATA_DIR', async () => {
    const port = await freePort();
    const dataDir = tempFolder();
    const started = await start('npm', ['start'], /TodoMVC on viewsync: (\S+) \((.+)\)/, ROOT, { PORT: String(port), DATA_DIR: dataDir });
    expect(started.match[1]).toBe(`http://127.0.0.1:${port}/`);
    expect(started.match[2]).toBe(`SQLite store: ${join(dataDir, 'todo.db')}`);
    await expectTodoApp(new URL(started.match[1]!));
    expect(existsSync(join(dataDir, 'todo.db'))).toBe(true);
    // The inspector it prints the address of: its login page.
    const inspector = await fetch(new URL('api/_inspect/', started.match[1]));
    expect([inspector.status, await inspector.text()]).toEqual([200, expect.stringContaining('name="secret"')]);
  });

  // SIGTERM as a process manager sends it, to the server's own process: `tsx examples/todo/server.ts`
  // is what `npm start` runs, since npm (11) exits on SIGTERM without passing it on. SIGINT as
  // Ctrl-C sends it, to the whole process group of `npm start`: npm, tsx and the server alike.
  it.each([
    ['SIGTERM', 'tsx examples/todo/server.ts', bin('tsx'), ['examples/todo/server.ts']],
    ['SIGINT', 'npm start', 'npm', ['start']],
  ] as const)('%s to %s: poke streams end with a reconnect hint, the database is closed, the server exits', async (signal, _, command, args) => {
    const port = await freePort();
    const dataDir = tempFolder();
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      while (!output.includes('TodoMVC on viewsync')) await new Promise((resolve) => setTimeout(resolve, 50));
      const url = new URL(`http://127.0.0.1:${port}/api/`);
      const poke = await fetch(new URL('poke', url));
      const reader = poke.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = (await reader.read()).value ?? '';
      const pushed = await fetch(new URL('push', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(pushBody('g', [mutation('c', 1, 'createTodo', { id: 't1', text: 'Ship it', sort: 1 })])),
      });
      expect(pushed.status).toBe(200);
      if (signal === 'SIGTERM') process.kill(child.pid!, signal);
      else process.kill(-child.pid!, signal);
      for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value;
      expect(text).toMatch(/\nretry: \d+\n\n$/);
      const code = await exited;
      if (signal === 'SIGTERM') expect(code).toBe(0);
      expect(output).toContain('Stopping: answering the requests in flight…');
      // The last connection's close folds SQLite's write-ahead log into the file, and removes it;
      // the store's lock file stays, unlocked.
      await until(() => readdirSync(dataDir).sort().join() === 'todo.db,todo.db-viewsync-lock');
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // All gone.
      }
    }
  });

  it("examples import only what a user can: viewsync's public entries, packages, node: modules and files of their own folder", () => {
    const publicEntries = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports).map(
      (entry) => entry.replace(/^\./, 'viewsync'),
    );
    const files = (readdirSync(join(ROOT, 'examples'), { recursive: true }) as string[]).filter(
      (file) => /\.tsx?$/.test(file) && !file.includes('node_modules'),
    );
    const bad: string[] = [];
    for (const file of files) {
      const source = readFileSync(join(ROOT, 'examples', file), 'utf8');
      for (const [, name] of source.matchAll(/^(?:import|export)\b[^'"]*?from '([^']+)'/gm)) {
        const inside = name!.startsWith('.') && !relative(join(ROOT, 'examples'), join(ROOT, 'examples', dirname(file), name!)).startsWith('..');
        const ok = name!.startsWith('viewsync') ? publicEntries.includes(name!) : name!.startsWith('.') ? inside : true;
        if (!ok) bad.push(`${file}: ${name}`);
      }
    }
    expect(files.length).toBeGreaterThan(5);
    expect(bad).toEqual([]);
  });

  it('examples/todo, copied on its own and installed as its package.json says, runs with npm start', async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'examples/todo/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    // viewsync is the packed package; the rest are the versions this repository installed.
    const dir = userProject(Object.keys(manifest.dependencies).filter((name) => name !== 'viewsync'));
    folders.push(dir);
    cpSync(join(ROOT, 'examples/todo'), dir, { recursive: true });
    mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(dir, 'node_modules/.bin/tsx'));
    const port = await freePort();
    const started = await start('npm', ['start'], /TodoMVC on viewsync: (\S+) \((.+)\)/, dir, { PORT: String(port) });
    expect(started.match[2]).toBe('SQLite store: data/todo.db');
    await expectTodoApp(new URL(started.match[1]!));
    expect(existsSync(join(dir, 'data/todo.db'))).toBe(true);
  });

  it('a second demo server on the same SQLite file stops at startup, in one line saying the file is in use; the first serves on', async () => {
    const dataDir = tempFolder();
    const port = await freePort();
    const first = await start(bin('tsx'), ['examples/todo/server.ts'], /TodoMVC on viewsync: (\S+)/, ROOT, { PORT: String(port), DATA_DIR: dataDir });
    const second = await runCommand(bin('tsx'), ['examples/todo/server.ts'], { cwd: ROOT, env: { PORT: String(await freePort()), DATA_DIR: dataDir } });
    expect(second.code).toBe(1);
    expect(second.output.trim()).toBe(
      `${join(dataDir, 'todo.db')} is in use by another viewsync store (another process, or another handle in this one): a SQLite file is served by one process, whose locks keep its guarantees. Stop the other, or use PostgreSQL for several instances`,
    );
    await expectTodoApp(new URL(first.match[1]!));
  });

  it('npm start -- --memory: the TodoMVC demo on a memory store, on any free port with PORT=0', async () => {
    const dataDir = tempFolder();
    const started = await start('npm', ['start', '--', '--memory'], /TodoMVC on viewsync: (\S+) \((.+)\)/, ROOT, { PORT: '0', DATA_DIR: dataDir });
    expect(started.match[1]).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*\/$/);
    expect(started.match[2]).toMatch(/^memory store/);
    await expectTodoApp(new URL(started.match[1]!));
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it('Node, honouring PORT', async () => {
    const port = await freePort();
    const started = await start('npx', ['tsx', 'examples/node.ts'], /pushURL: (\S+)/, ROOT, { PORT: String(port) });
    expect(started.match[1]).toBe(`http://127.0.0.1:${port}/push`);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it.each([
    ['examples/node.ts', 'npx tsx examples/node.ts'],
    ['examples/todo/server.ts', 'npm start'],
  ])('%s on a busy port says which port and how to pick another, in one line', async (script, command) => {
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    const port = (busy.address() as { port: number }).port;
    const { code, output } = await runCommand(bin('tsx'), [script], { cwd: ROOT, env: { PORT: String(port), DATA_DIR: tempFolder() } });
    busy.close();
    expect(code).toBe(1);
    expect(output.trim()).toBe(`Port ${port} is in use: pick another with PORT, e.g. \`PORT=${port + 1} ${command}\`.`);
  });

  it('Deno, from the source, honouring PORT', async () => {
    const port = await freePort();
    await start(bin('deno'), ['run', '--no-remote', '--allow-net', '--allow-env', '--config', 'examples/deno.json', 'examples/deno.ts'], /pushURL:/, ROOT, {
      PORT: String(port),
      DENO_NO_UPDATE_CHECK: '1',
    });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it('Bun, honouring PORT', async () => {
    const port = await freePort();
    await start(bin('bun'), ['examples/bun.ts'], /pushURL:/, ROOT, { PORT: String(port) });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it('Cloudflare: `wrangler dev` in examples/cloudflare serves a Durable Object per space', async () => {
    const port = await freePort();
    await start(bin('wrangler'), ['dev', '--port', String(port), '--ip', '127.0.0.1'], /Ready on/, join(ROOT, 'examples', 'cloudflare'), {
      WRANGLER_SEND_METRICS: 'false',
      CI: '1',
    });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`), '?space=test');
  });
});

/** The demo's page and assets, a todo pushed and pulled back under /api/, and a poke stream. */
async function expectTodoApp(base: URL): Promise<void> {
  const page = await fetch(base);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await page.text()).toContain('<section class="todoapp">');
  for (const [path, type] of [
    ['client.js', /^text\/javascript/],
    ['todomvc.css', /^text\/css/],
  ] as const) {
    const asset = await fetch(new URL(path, base));
    expect([asset.status, asset.headers.get('content-type')]).toEqual([200, expect.stringMatching(type)]);
    await asset.arrayBuffer();
  }
  const send = (path: string, body: unknown) =>
    fetch(new URL(`api/${path}`, base), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const todo = { id: 't1', text: 'Try the demo', sort: 1 };
  const pushed = await send('push', pushBody('g', [mutation('c', 1, 'createTodo', todo)]));
  expect(pushed.status, await pushed.clone().text()).toBe(200);
  const pulled = await (await send('pull', pullBody('g', null))).json();
  expect(pulled).toMatchObject({
    lastMutationIDChanges: { c: 1 },
    patch: [{ op: 'clear' }, { op: 'put', key: 'todo/t1', value: { ...todo, completed: false } }],
  });
  const pokes = new AbortController();
  const stream = await fetch(new URL('api/poke', base), { signal: pokes.signal });
  expect([stream.status, stream.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/event-stream/)]);
  pokes.abort();
}
