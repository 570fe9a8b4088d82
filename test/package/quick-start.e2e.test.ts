import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { pushAndPull } from '../support/helpers.js';
import { ROOT, tarball } from './packed.js';

/**
 * The README's Quick start as a user runs it: a new folder, its shell commands in order, its
 * two files pasted, its run command. The one thing changed is where `viewsync` comes from: the
 * packed package, not the registry (which has no such release). npm itself installs the rest
 * from the registry (its cache first), so the project is what `npm install` really makes.
 */
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const block = (name: string) => new RegExp(`<!-- quick-start: ${name} -->\\n\`\`\`sh\\n([^]*?)\`\`\`\\n`).exec(readme)?.[1] ?? '';
const snippet = (file: string) => new RegExp(`<!-- snippet: ${file.replace('.', '\\.')} \\S+ -->\\n\`\`\`ts\\n([^]*?)\`\`\`\\n`).exec(readme)?.[1];
const parent = mkdtempSync(join(tmpdir(), 'viewsync-quick-start-'));
const running: Started[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.stop()));
});
afterAll(() => rmSync(parent, { recursive: true, force: true }));

it('the Quick start works as written: a new folder, the README\'s commands in order, its files pasted', async () => {
  const setup = block('setup');
  const project = /^mkdir (\S+)/m.exec(setup)?.[1];
  expect(project, 'the setup block makes the project folder').toBeDefined();
  const commands = setup.replace(/^(npm install .*)\bviewsync\b/m, (_, before: string) => `${before}${tarball()}`);
  expect(commands).not.toBe(setup);
  // Quiet npm's advertising, as many users' configs do; nothing else is set for them.
  const env = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false', npm_config_prefer_offline: 'true' };
  const installed = await runCommand('bash', ['-euo', 'pipefail', '-c', commands], { cwd: parent, env });
  expect(installed.code, installed.output).toBe(0);
  const dir = join(parent, project!);
  expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).toMatchObject({ type: 'module' });
  for (const file of ['mutators.ts', 'server.ts']) writeFileSync(join(dir, file), snippet(file)!);
  const port = await freePort();
  const run = block('run').trim();
  expect(run.split('\n')).toHaveLength(1);
  const server = await startCommand('bash', ['-c', `exec ${run}`], { cwd: dir, env: { PORT: String(port) }, ready: /push: /, timeoutMs: 60_000 });
  running.push(server);
  expect(server.output()).toContain(`pull: http://127.0.0.1:${port}/pull, push: http://127.0.0.1:${port}/push`);
  await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
}, 180_000);
