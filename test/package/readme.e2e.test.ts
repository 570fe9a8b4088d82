import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { mutation, post, pullBody, pushAndPull, pushBody } from '../support/helpers.js';
import { betterSQLiteMissing } from '../support/sqlite-driver.js';
import { ROOT, userProject } from './packed.js';

/**
 * Every code snippet of the documentation (README.md, CONTRIBUTING.md and docs/*.md), as printed,
 * in one user's project that installed the packed package. Each TypeScript or TOML snippet
 * follows a `<!-- snippet: FILE RUNNER -->` line that names the file it becomes (unique across
 * the pages, since they share the project) and how it runs:
 * - `module`: imported by other snippets;
 * - `node`, `deno`, `bun`: a server started with that runtime (`tsx` for Node), on `PORT`;
 * - `node-otel`: a `node` server that exports OpenTelemetry over OTLP/HTTP: its spans and
 *   metrics must reach a collector (a stand-in here, at `OTEL_EXPORTER_OTLP_ENDPOINT`);
 * - `node-postgres`: a `node` server that needs `DATABASE_URL` (a database of its own here;
 *   skipped without a server, as .ci/run always has one);
 * - `node-test`: a `node:test` file, run with `tsx --test`;
 * - `client`: a client run in Node (with an in-memory IndexedDB) against the `node` server, its
 *   `localhost:8787` pointed at that server's port;
 * - `browser`: a client that needs a page (the Quick start's): compiled here, run in Chromium by
 *   quick-start.e2e.test.ts;
 * - `fetch`: a module whose default export's `fetch` is called;
 * - `wrangler`: a Worker run by `wrangler dev`, with the `config` snippet as its wrangler.toml.
 * Every TypeScript snippet also compiles, all together, in a strict project (no skipLibCheck).
 */
const run = promisify(execFile);
// README.md first: its Quick start holds the Node server that the `client` snippets run against.
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
]
  .filter((page) => existsSync(join(ROOT, page)))
  .map((page) => ({ page, text: readFileSync(join(ROOT, page), 'utf8') }));
const snippets = pages.flatMap(({ page, text }) =>
  [...text.matchAll(/<!-- snippet: (\S+) (\S+) -->\n```(\w+)\n([\s\S]*?)```\n/g)].map(([, file, runner, language, code]) => ({
    page,
    file: file!,
    runner: runner!,
    language: language!,
    code: code!,
  })),
);
const OTEL = ['@opentelemetry/sdk-node', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-metrics-otlp-http'];
const dir = userProject(
  ['replicache', 'fake-indexeddb', '@types', 'better-sqlite3', 'postgres', 'fast-check', 'ws', ...OTEL],
  Object.fromEntries(snippets.map(({ file, code }) => [file, code])),
);
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
const byRunner = (runner: string) => snippets.filter((snippet) => snippet.runner === runner);

const running: Started[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.stop()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(command: string, args: string[], port: number, ready: RegExp, env: Record<string, string> = {}): Promise<Started> {
  const started = await startCommand(command, args, {
    cwd: dir,
    env: { PORT: String(port), WRANGLER_SEND_METRICS: 'false', DENO_NO_UPDATE_CHECK: '1', ...env },
    ready,
    timeoutMs: 60_000,
  });
  running.push(started);
  return started;
}

describe('the snippets of README.md, CONTRIBUTING.md and docs/*.md', () => {
  it('marks every TypeScript and TOML snippet of every page with how it runs, and there are some of each kind', () => {
    expect(pages.map(({ page }) => page)).toEqual(expect.arrayContaining(['README.md', 'docs/README.md']));
    for (const { page, text } of pages) {
      const fenced = [...text.matchAll(/```(ts|toml|js|tsx)\n/g)].length;
      expect(snippets.filter((snippet) => snippet.page === page).length, page).toBe(fenced);
    }
    for (const runner of ['module', 'node', 'node-otel', 'node-postgres', 'node-test', 'browser', 'fetch', 'deno', 'bun', 'wrangler', 'config'])
      expect(byRunner(runner), runner).not.toEqual([]);
  });

  it('names a file of its own in every snippet: the pages share one project', () => {
    const pagesOf = new Map<string, string[]>();
    for (const { file, page } of snippets) pagesOf.set(file, [...(pagesOf.get(file) ?? []), page]);
    expect([...pagesOf].filter(([, where]) => where.length > 1)).toEqual([]);
  });

  it('every TypeScript snippet compiles in a strict project against the packed package', async () => {
    // But Deno's and Bun's, which import their runtime's own modules (node:sqlite, bun:sqlite),
    // whose types a Node project has not: running them in their runtime, below, is their test.
    const files = snippets.filter(({ language, runner }) => language === 'ts' && runner !== 'deno' && runner !== 'bun').map(({ file }) => file);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [
      '--strict',
      '--noEmit',
      '--allowImportingTsExtensions',
      '--target',
      'es2022',
      '--lib',
      'es2022,dom,dom.iterable',
      '--types',
      'node',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      ...files,
    ];
    const result = await run(process.execPath, [tsc, ...args], { cwd: dir }).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  });

  // The servers on better-sqlite3 show that driver itself: they run where it loaded.
  const onBetterSQLite = ({ code }: { code: string }) => code.includes("from 'better-sqlite3'");
  const servesInNode = async (file: string) => {
    const port = await freePort();
    freshDatabaseFiles();
    await start(bin('tsx'), [file], port, /push:/);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  };
  it.each(
    byRunner('node')
      .filter((snippet) => !onBetterSQLite(snippet))
      .map(({ file }) => file),
  )('%s serves in Node', servesInNode);
  const betterSQLiteServers = byRunner('node')
    .filter(onBetterSQLite)
    .map(({ file }) => file);
  if (betterSQLiteMissing) console.log(`Skipped: the snippets on better-sqlite3 (${betterSQLiteServers.join(', ')}): ${betterSQLiteMissing}`);
  it.skipIf(betterSQLiteMissing).each(betterSQLiteServers)('%s serves in Node', servesInNode);

  it.each(byRunner('node-otel').map(({ file }) => file))('%s serves in Node and sends its spans and metrics over OTLP', async (file) => {
    const received: string[] = [];
    const collector = createServer((request, response) => {
      received.push(request.url ?? '');
      request.resume().once('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    try {
      const port = await freePort();
      const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
      // Spans within 200 ms rather than the SDK's default 5 s; metrics when the server stops.
      const started = await start(bin('tsx'), [file], port, /push:/, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '200' });
      await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
      await expect.poll(() => received, { timeout: 15_000, interval: 100 }).toContain('/v1/traces');
      await started.stop();
      expect(received).toContain('/v1/metrics');
    } finally {
      collector.close();
    }
  });

  it.each(byRunner('client').map(({ file }) => file))('%s, run in Node against the Node server snippet, pushes its mutation', async (file) => {
    const port = await freePort();
    await start(bin('tsx'), [byRunner('node')[0]!.file], port, /push:/);
    const local = `local-${file}`;
    writeFileSync(join(dir, local), readFileSync(join(dir, file), 'utf8').replaceAll('localhost:8787', `localhost:${port}`));
    running.push(await startCommand(bin('tsx'), ['--import', 'fake-indexeddb/auto', local], { cwd: dir }));
    // The server starts empty: the value can only come from the client.
    await expect.poll(() => view(port), { timeout: 15_000, interval: 100 }).toEqual({ hello: 'world' });
  });

  it.runIf(process.env.DATABASE_URL).each(byRunner('node-postgres').map(({ file }) => file))(
    '%s serves in Node on PostgreSQL (a database of its own)',
    async (file) => {
      const admin = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 1 });
      const database = `readme_${process.pid}`;
      await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.unsafe(`CREATE DATABASE ${database}`);
      try {
        const url = new URL(process.env.DATABASE_URL!);
        url.pathname = `/${database}`;
        const port = await freePort();
        const started = await start(bin('tsx'), [file], port, /push:/, { DATABASE_URL: url.href });
        await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
        // A second one on the same port: one line saying so, not an EADDRINUSE stack.
        const second = await runCommand(bin('tsx'), [file], { cwd: dir, env: { DATABASE_URL: url.href, PORT: String(port) } });
        expect(second.code).not.toBe(0);
        expect(second.output.trim()).toBe(`Port ${port} is in use: set PORT to another`);
        await started.stop();
      } finally {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.end();
      }
    },
  );

  it.each(byRunner('node-postgres').map(({ file }) => file))(
    '%s with DATABASE_URL unset, refused, or naming a server that is not PostgreSQL: exits at startup saying what to check',
    async (file) => {
      const notPostgres = createServer((_request, response) => response.end('not PostgreSQL')).listen(0, '127.0.0.1');
      await new Promise((resolve) => notPostgres.once('listening', resolve));
      try {
        // With about what each takes here on 2 cores under a load of 5 (1.6 to 2.1 s of tsx's
        // start-up; 11.9 s with the example's 10 s wait).
        const cases: Array<[Record<string, string>, RegExp, number]> = [
          [{}, /Set DATABASE_URL/, 2_000],
          [{ DATABASE_URL: `postgres://u@127.0.0.1:${await freePort()}/app` }, /ECONNREFUSED/, 2_000],
          [
            { DATABASE_URL: `postgres://u@127.0.0.1:${(notPostgres.address() as AddressInfo).port}/app` },
            /PostgreSQL did not answer within 10 s: check the database URL/,
            12_000,
          ],
        ];
        for (const [env, expected, took] of cases) {
          const started = performance.now();
          const { code, output } = await runCommand(
            'env',
            ['-u', 'DATABASE_URL', ...Object.entries(env).map(([name, value]) => `${name}=${value}`), bin('tsx'), file],
            { cwd: dir },
          );
          expect(code, output).not.toBe(0);
          expect(output).toMatch(expected);
          expect(output).not.toContain('push:');
          // One line, not a driver's error object or a stack trace.
          expect(output.trim().split('\n'), output).toHaveLength(1);
          // Only catches a hang, or a wait far past the example's 10 s: ten times what it took here.
          expect(performance.now() - started).toBeLessThan(took * 10);
        }
      } finally {
        notPostgres.close();
      }
    },
    240_000,
  );

  it.each(byRunner('node-test').map(({ file }) => file))('%s passes under node:test', async (file) => {
    const { code, output } = await runCommand(bin('tsx'), ['--test', file], { cwd: dir });
    expect(code, output.slice(-2000)).toBe(0);
    // As many passing tests as the snippet declares (the conformance suite declares them in a loop).
    const declared = [...snippets.find((snippet) => snippet.file === file)!.code.matchAll(/^(?:for .*)?\btest\(/gm)];
    const looped = declared.some(([line]) => line.startsWith('for '));
    expect(Number(/# pass (\d+)/.exec(output)?.[1])).toBeGreaterThanOrEqual(looped ? 30 : declared.length);
    expect(output).toMatch(/# fail 0/);
  });

  it.each(byRunner('deno').map(({ file }) => file))('%s serves in Deno', async (file) => {
    const port = await freePort();
    freshDatabaseFiles();
    await start(bin('deno'), ['run', '--no-remote', '--allow-net', '--allow-env', '--allow-read', '--allow-write', file], port, /push:/);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it.each(byRunner('bun').map(({ file }) => file))('%s serves in Bun', async (file) => {
    const port = await freePort();
    freshDatabaseFiles();
    await start(bin('bun'), [file], port, /push:/);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it.each(byRunner('wrangler').map(({ file }) => file))('%s serves in workerd under `wrangler dev`, with the wrangler.toml snippet', async (file) => {
    const config = readFileSync(join(dir, byRunner('config')[0]!.file), 'utf8');
    expect(config).toContain(`main = "${file}"`);
    const port = await freePort();
    await start(bin('wrangler'), ['dev', '--port', String(port), '--ip', '127.0.0.1'], port, /Ready on/);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`), '?space=readme');
  });

  it.each(byRunner('fetch').map(({ file }) => file))('%s answers push and pull through its default export', async (file) => {
    const app = (await import(pathToFileURL(join(dir, file)).href)).default as { fetch: (request: Request) => Promise<Response> };
    expect((await app.fetch(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'hello', value: 'world' })])))).status).toBe(200);
    const pulled = await (await app.fetch(post('/pull', pullBody('g', null)))).json();
    expect(pulled.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'hello', value: 'world' }]);
  });
});

/** Removes the SQLite snippets' database, so each server starts on an empty one. */
function freshDatabaseFiles(): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `sync.db${suffix}`), { force: true });
}

/** The server's whole view, by a full pull of a group of its own. */
async function view(port: number): Promise<Record<string, unknown>> {
  const response = await fetch(`http://127.0.0.1:${port}/pull`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(pullBody('reader', null)),
  });
  const { patch } = (await response.json()) as { patch: Array<{ op: string; key?: string; value?: unknown }> };
  return Object.fromEntries(patch.filter((op) => op.op === 'put').map((op) => [op.key, op.value]));
}
