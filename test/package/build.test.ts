import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Builds the package as `npm run build` does, into a scratch folder, and uses what it produced
 * the way consumers will: `import` (ESM) and `require` (CJS).
 */
const root = new URL('../..', import.meta.url).pathname;
// Inside node_modules, so that the built files resolve `valibot` as an installed package would.
const out = mkdtempSync(join(root, 'node_modules', '.viewsync-build-test-'));

beforeAll(() => {
  execFileSync(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js'), '--out-dir', out], { cwd: root, stdio: 'pipe' });
}, 60_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

async function roundTrip(api: typeof import('../../src/index.js')) {
  const ctx = { storage: api.memoryStorage(), mutators: { put: (tx: import('../../src/index.js').WriteTransaction, a: { key: string }) => tx.set(a.key, 1) } };
  const request = (path: string, body: unknown) => new Request(`http://x${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await api.handleRequest(request('/push', { pushVersion: 1, clientGroupID: 'g', profileID: 'p', schemaVersion: '', mutations: [{ clientID: 'c', id: 1, name: 'put', args: { key: 'k' } }] }), ctx);
  return (await api.handleRequest(request('/pull', { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' }), ctx)).json();
}

describe('the built package', () => {
  it('works as ESM', async () => {
    const api = await import(pathToFileURL(join(out, 'index.js')).href);
    expect(await roundTrip(api)).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 1 }] });
  });

  it('works as CommonJS', async () => {
    const api = createRequire(import.meta.url)(join(out, 'index.cjs'));
    expect(await roundTrip(api)).toMatchObject({ lastMutationIDChanges: { c: 1 } });
  });

  it('ships type declarations for both', () => {
    for (const file of ['index.d.ts', 'index.d.cts']) expect(readFileSync(join(out, file), 'utf8')).toMatch(/declare function handlePull/);
  });

  it('imports nothing runtime-specific from the root entry, so it runs in any runtime', () => {
    for (const file of ['index.js', 'index.cjs']) {
      const code = readFileSync(join(out, file), 'utf8');
      const imports = [...code.matchAll(/(?:from\s+|require\()["']([^"']+)["']/g)].map((m) => m[1]);
      expect(imports.every((name) => name === 'valibot')).toBe(true);
      expect(code).not.toMatch(/\bprocess\.|\bBuffer\b|__dirname/);
    }
  });
});
