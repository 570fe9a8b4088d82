import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { afterAll, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { pushAndPull } from '../support/helpers.js';
import { ROOT, tarball } from './packed.js';

/**
 * The README's Quick start as a user runs it: a new folder, its shell commands in order, its
 * files pasted, its run command, then its page in two browsers. What is changed: where `viewsync`
 * comes from (the packed package, not the registry, which has no such release), and the two ports
 * (free ones, not 8787 and 8000, which something else on the machine may hold). npm itself
 * installs the rest from the registry (its cache first), so the project is what `npm install`
 * really makes.
 */
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const block = (name: string) => new RegExp(`<!-- quick-start: ${name.replace('.', '\\.')} -->\\n\`\`\`\\w+\\n([^]*?)\`\`\`\\n`).exec(readme)?.[1] ?? '';
const snippet = (file: string) => new RegExp(`<!-- snippet: ${file.replace('.', '\\.')} \\S+ -->\\n\`\`\`ts\\n([^]*?)\`\`\`\\n`).exec(readme)?.[1];
const parent = mkdtempSync(join(tmpdir(), 'viewsync-quick-start-'));
// Kept from the first test for the second: the installed project and its running server.
let dir: string | undefined;
let serverPort = 0;
const running: Started[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((started) => started.stop()));
  rmSync(parent, { recursive: true, force: true });
});

it('pastes every block of the Quick start: these and no others', () => {
  const named = [...readme.matchAll(/<!-- quick-start: (\S+) -->/g)].map(([, name]) => name);
  expect(named).toEqual(['setup', 'run', 'index.html', 'page']);
  for (const file of ['mutators.ts', 'server.ts', 'client.ts']) expect(snippet(file), file).toBeDefined();
});

it("the Quick start works as written: a new folder, the README's commands in order, its files pasted", async () => {
  const setup = block('setup');
  const project = /^mkdir (\S+)/m.exec(setup)?.[1];
  expect(project, 'the setup block makes the project folder').toBeDefined();
  const commands = setup.replace(/^(npm install .*)\bviewsync\b/m, (_, before: string) => `${before}${tarball()}`);
  expect(commands).not.toBe(setup);
  // Quiet npm's advertising, as many users' configs do; nothing else is set for them.
  const env = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false', npm_config_prefer_offline: 'true' };
  const installed = await runCommand('bash', ['-euo', 'pipefail', '-c', commands], { cwd: parent, env });
  expect(installed.code, installed.output).toBe(0);
  const folder = join(parent, project!);
  expect(JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
  for (const file of ['mutators.ts', 'server.ts']) writeFileSync(join(folder, file), snippet(file)!);
  serverPort = await freePort();
  const run = block('run').trim();
  expect(run.split('\n')).toHaveLength(1);
  const server = await startCommand('bash', ['-c', `exec ${run}`], { cwd: folder, env: { PORT: String(serverPort) }, ready: /push: /, timeoutMs: 60_000 });
  running.push(server);
  expect(server.output()).toContain(`pull: http://127.0.0.1:${serverPort}/pull, push: http://127.0.0.1:${serverPort}/push`);
  await pushAndPull(new URL(`http://127.0.0.1:${serverPort}/`));
  dir = folder;
}, 180_000);

it.skipIf(!hasChromium("the Quick start's page in a browser"))(
  "its page, served by the README's one command, syncs what is typed in one browser to another",
  async () => {
    expect(dir, 'the test above installed the project and started its server').toBeDefined();
    writeFileSync(join(dir!, 'index.html'), block('index.html'));
    const client = snippet('client.ts')!;
    expect(client).toContain('http://localhost:8787');
    writeFileSync(join(dir!, 'client.ts'), client.replaceAll('localhost:8787', `localhost:${serverPort}`));

    const command = block('page').trim();
    expect(command.split('\n')).toHaveLength(1);
    const readmePort = /--serve=(\d+)/.exec(command)?.[1];
    expect(readme).toContain(`http://localhost:${readmePort}/`);
    const pagePort = await freePort();
    const page = await startCommand('bash', ['-c', `exec ${command.replace(`--serve=${readmePort}`, `--serve=${pagePort}`)}`], {
      cwd: dir!,
      ready: /Local:\s+http/,
      timeoutMs: 60_000,
      openStdin: true,
    });
    running.push(page);

    const browser = await launchChromium();
    try {
      const errors: string[] = [];
      // Two contexts: two client groups, as two browsers are.
      const open = async (name: string) => {
        const tab = await (await browser.newContext()).newPage();
        tab.on('console', (message) => void (message.type() === 'error' && errors.push(`${name}: ${message.text()}`)));
        tab.on('pageerror', (error) => errors.push(`${name}: ${error.message}`));
        await tab.goto(`http://localhost:${pagePort}/`);
        return tab;
      };
      const [a, b] = [await open('A'), await open('B')];
      const shown = (tab: Page) => tab.locator('output').textContent();
      // Within this, or the poke (or the pull after it) went missing: the client's own pull comes each 60 s.
      const soon = { timeout: 10_000, interval: 50 };

      await type(a, 'typed on A');
      await expect.poll(() => shown(b), soon).toBe('typed on A');
      expect(await shown(a)).toBe('typed on A');
      await type(b, 'and then on B');
      await expect.poll(() => shown(a), soon).toBe('and then on B');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  },
  120_000,
);

/** What a user does: types into the page's field and presses Enter. */
async function type(page: Page, text: string): Promise<void> {
  await page.fill('input', text);
  await page.press('input', 'Enter');
}
