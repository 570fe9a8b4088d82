import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, runCommand, type Started, startCommand } from './command.js';
import { pushAndPull } from './helpers.js';
import { ROOT } from './package/packed.js';

// Every example in examples/ starts as its comment says and serves a push and a pull.
const running: Started[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.stop()));
});

const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

async function start(command: string, args: string[], ready: RegExp, cwd = ROOT, env: Record<string, string> = {}): Promise<Started> {
  const started = await startCommand(command, args, { cwd, env, ready, timeoutMs: 60_000 });
  running.push(started);
  return started;
}

describe('examples', () => {
  it('npm start: the Node example serves on PORT', async () => {
    const port = await freePort();
    const started = await start('npm', ['start'], /pushURL: (\S+)/, ROOT, { PORT: String(port) });
    expect(started.match[1]).toBe(`http://127.0.0.1:${port}/push`);
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it('npm start on a busy port says which port and how to pick another, in one line', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    const port = (busy.address() as { port: number }).port;
    const { code, output } = await runCommand(bin('tsx'), ['examples/node.ts'], { cwd: ROOT, env: { PORT: String(port) } });
    busy.close();
    expect(code).toBe(1);
    expect(output.trim()).toBe(`Port ${port} is in use: pick another with PORT, e.g. \`PORT=${port + 1} npm start\`.`);
  });

  it('Deno, from the source, honouring PORT', async () => {
    const port = await freePort();
    await start(bin('deno'), ['run', '--no-remote', '--allow-net', '--allow-env', '--config', 'examples/deno.json', 'examples/deno.ts'], /pushURL:/, ROOT, { PORT: String(port), DENO_NO_UPDATE_CHECK: '1' });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it('Bun, honouring PORT', async () => {
    const port = await freePort();
    await start(bin('bun'), ['examples/bun.ts'], /pushURL:/, ROOT, { PORT: String(port) });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`));
  });

  it('Cloudflare: `wrangler dev` in examples/cloudflare serves a Durable Object per space', async () => {
    const port = await freePort();
    await start(bin('wrangler'), ['dev', '--port', String(port), '--ip', '127.0.0.1'], /Ready on/, join(ROOT, 'examples', 'cloudflare'), { WRANGLER_SEND_METRICS: 'false', CI: '1' });
    await pushAndPull(new URL(`http://127.0.0.1:${port}/`), '?space=test');
  });
});
