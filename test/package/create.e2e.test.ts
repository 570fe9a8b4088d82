import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import semver from 'semver';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { ROOT, tarball } from './packed.js';

/**
 * `npm create viewsync@latest` as a user runs it, from the packed create-viewsync: npm runs its
 * bin (`npm exec`, which `npm create` is), the project it writes is installed by npm from the
 * registry (its cache first), type-checked, started with `npm run dev`, and opened in two
 * browsers. What is changed: `viewsync` comes from the packed package (the registry has no such
 * release). The app stores its data through node:sqlite: nothing native is built at install.
 */
const parent = mkdtempSync(join(tmpdir(), 'create-viewsync-'));
const npmEnv = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false', npm_config_prefer_offline: 'true' };
let starter = '';
// Kept from test to test: the project written, installed and started.
let app = '';
let server: Started | undefined;
let url: URL | undefined;

beforeAll(async () => {
  const packed = await runCommand('npm', ['pack', '--silent', '--pack-destination', parent], { cwd: join(ROOT, 'create-viewsync'), env: npmEnv });
  expect(packed.code, packed.output).toBe(0);
  starter = join(parent, packed.output.trim().split('\n').at(-1)!);
  // The name the README's install-from-a-checkout commands give it.
  const { version } = JSON.parse(readFileSync(join(ROOT, 'create-viewsync', 'package.json'), 'utf8')) as { version: string };
  expect(starter).toBe(join(parent, `create-viewsync-${version}.tgz`));
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(parent, { recursive: true, force: true });
});

/** `npm create viewsync@latest [args]`, with the packed starter in place of the registry's. */
function create(args: string[], cwd = parent) {
  return runCommand('npm', ['exec', '--yes', `--package=${starter}`, '--', 'create-viewsync', ...args], { cwd, env: npmEnv });
}

describe('npm create viewsync', () => {
  it('is a package of its own: the viewsync tarball leaves it out', () => {
    expect(execFileSync('tar', ['tzf', tarball()], { encoding: 'utf8' })).not.toContain('create-viewsync');
    expect(execFileSync('tar', ['tzf', starter], { encoding: 'utf8' }).split('\n').filter(Boolean).sort()).toEqual(
      [
        'index.js',
        'package.json',
        'README.md',
        'template/client.ts',
        'template/gitignore',
        'template/index.html',
        'template/mutators.ts',
        'template/README.md',
        'template/server.ts',
        'template/tsconfig.json',
      ]
        .map((file) => `package/${file}`)
        .sort(),
    );
  });

  it('refuses a folder that is not empty, in one line, and writes nothing', async () => {
    const taken = join(parent, 'taken');
    mkdirSync(taken);
    writeFileSync(join(taken, 'notes.txt'), 'mine');
    const { code, output } = await create(['taken']);
    expect(code, output).toBe(1);
    // npm adds lines of its own (`npm error ...`) after a bin that failed; the starter says one.
    const own = output.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('npm '));
    expect(own).toEqual(['taken already exists and is not an empty folder: name a new one, e.g. npm create viewsync@latest my-other-app']);
    expect(readdirSync(taken)).toEqual(['notes.txt']);
    expect(readFileSync(join(taken, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('writes a project into my-viewsync-app, asking nothing, and says what to run next', async () => {
    const { code, output } = await create([]);
    expect(code, output).toBe(0);
    expect(output).toContain('cd my-viewsync-app && npm install && npm run dev');
    app = join(parent, 'my-viewsync-app');
    expect(readdirSync(app).sort()).toEqual([
      '.gitignore',
      'README.md',
      'client.ts',
      'index.html',
      'mutators.ts',
      'package.json',
      'server.ts',
      'tsconfig.json',
    ]);
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: 'my-viewsync-app', type: 'module', scripts: { dev: 'tsx watch server.ts', start: 'tsx server.ts' } });
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['esbuild', 'replicache', 'tsx', 'valibot', 'viewsync']);
    // The releases it asks for take in this repository's: the viewsync it is published with, and
    // the packages this repository tests with (a release bumped here must be bumped there).
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(semver.satisfies(root.version, manifest.dependencies.viewsync), `viewsync ${root.version} in ${manifest.dependencies.viewsync}`).toBe(true);
    // But @types/node, which follows the starter's Node floor, not the Node this repository types against.
    const others = Object.entries<string>({ ...manifest.dependencies, ...manifest.devDependencies }).filter(
      ([name]) => name !== 'viewsync' && name !== '@types/node',
    );
    for (const [name, range] of others) {
      const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
      expect(semver.satisfies(version, range), `${name} ${version} in ${range}`).toBe(true);
    }
    expect(readFileSync(join(app, '.gitignore'), 'utf8')).toMatch(/^data\/$/m);
  }, 60_000);

  it("installs with npm, the packed viewsync in place of the registry's, and type-checks (strict, no skipLibCheck)", async () => {
    expect(app, 'the test above wrote the project').not.toBe('');
    const installed = await runCommand('npm', ['install', tarball()], { cwd: app, env: npmEnv });
    expect(installed.code, installed.output).toBe(0);
    // Every install script in the app's tree is one its allowScripts names (npm 11 warns of others).
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const scripted = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.split('node_modules/').at(-1)!);
    expect([...new Set(scripted)].sort()).toEqual(Object.keys(manifest.allowScripts).sort());
    const typecheck = await runCommand('npm', ['run', 'typecheck'], { cwd: app });
    expect(typecheck.code, typecheck.output).toBe(0);
  }, 180_000);

  it('serves the page and its script on one port with `npm run dev`', async () => {
    expect(existsSync(join(app, 'node_modules', 'viewsync')), 'the test above installed the project').toBe(true);
    await startApp();
    expect(server!.output()).toContain('data/app.db');
    const page = await fetch(url!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="/client.js">');
    const script = await fetch(new URL('client.js', url));
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(await script.text()).toContain('/api/poke');
  }, 90_000);

  describe.skipIf(!hasChromium("the starter's page in a browser"))('in two browsers', () => {
    let browser: Browser;
    const errors: string[] = [];
    // Within this, or the poke (or the pull after it) went missing: the client's own pull comes each 60 s.
    const soon = { timeout: 10_000, interval: 50 };

    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(() => browser?.close());

    /** The app in a browser context of its own: a client group, as a second browser is. */
    async function open(name: string): Promise<Page> {
      const page = await (await browser.newContext()).newPage();
      page.on('console', (message) => void (message.type() === 'error' && errors.push(`${name}: ${message.text()}`)));
      page.on('pageerror', (error) => errors.push(`${name}: ${error.message}`));
      await page.goto(url!.href);
      await page.locator('form input').waitFor();
      return page;
    }

    it('shows what one page adds or deletes on the other', async () => {
      expect(url, 'the test above started the app').toBeDefined();
      const [a, b] = [await open('A'), await open('B')];
      await add(a, 'Milk');
      await expect.poll(() => items(b), soon).toEqual(['Milk']);
      await add(b, '  Bread ');
      await add(b, '   ');
      await expect.poll(() => items(a), soon).toEqual(['Milk', 'Bread']);
      await a.locator('li', { hasText: 'Milk' }).locator('button').click();
      await expect.poll(() => items(b), soon).toEqual(['Bread']);
      await a.context().close();
      await b.context().close();
      expect(errors).toEqual([]);
    }, 60_000);

    it('keeps the list in SQLite across a restart, run once with `npm start` as in production', async () => {
      await server!.stop();
      await startApp('start');
      const c = await open('C');
      await expect.poll(() => items(c), soon).toEqual(['Bread']);
      expect(existsSync(join(app, 'data', 'app.db'))).toBe(true);
      expect(errors).toEqual([]);
    }, 90_000);
  });
});

/** Starts `npm run dev` (or another of the app's scripts) on a free port, as `server` and `url`. */
async function startApp(script: 'dev' | 'start' = 'dev'): Promise<void> {
  server = await startCommand('npm', ['run', script], {
    cwd: app,
    env: { PORT: String(await freePort()) },
    ready: /viewsync app on (http:\S+)/,
    timeoutMs: 60_000,
  });
  url = new URL(server.match[1]!);
}

async function add(page: Page, text: string): Promise<void> {
  await page.fill('form input', text);
  await page.press('form input', 'Enter');
}

/** The texts of the list's items, in order. */
function items(page: Page): Promise<string[]> {
  return page.locator('li span').allTextContents();
}
