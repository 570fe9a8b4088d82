import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

// The built package (dist/, made by the global setup's pack) in real Deno, with the API and the
// SDK from node_modules: no network and no permissions.
it('a pull in Deno makes its span under a registered provider', async () => {
  const deno = `${root}node_modules/.bin/deno`;
  const args = ['run', '--no-prompt', '--no-remote', 'test/telemetry/deno-pull.js'];
  const { stdout } = await promisify(execFile)(deno, args, { cwd: root, env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' } });
  const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { status: number; spans: Array<{ name: string; attributes: Record<string, unknown> }> };
  expect(out.status).toBe(200);
  expect(out.spans).toEqual([
    {
      name: 'viewsync pull',
      attributes: expect.objectContaining({
        'viewsync.request_id': 'deno-1',
        'viewsync.client_group_id': 'g',
        'viewsync.outcome': 'ok',
        'viewsync.pull.reset': true,
      }),
    },
  ]);
});
