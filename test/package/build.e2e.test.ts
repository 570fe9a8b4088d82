import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Uses `dist/` (built by test/support/global-setup.ts with the project's tsup config, as `npm run build`
 * does) the way consumers will: `import` (ESM) and `require` (CJS).
 */
const dist = new URL('../../dist/', import.meta.url).pathname;

async function roundTrip(api: typeof import('../../src/index.js')) {
  const ctx = api.createContext({
    storage: api.memoryStorage(),
    mutators: { put: (tx: import('../../src/index.js').WriteTransaction, a: { key: string }) => tx.set(a.key, 1) },
  });
  const request = (path: string, body: unknown) =>
    new Request(`http://x${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await api.handleRequest(
    request('/push', {
      pushVersion: 1,
      clientGroupID: 'g',
      profileID: 'p',
      schemaVersion: '',
      mutations: [{ clientID: 'c', id: 1, name: 'put', args: { key: 'k' } }],
    }),
    ctx,
  );
  return (await api.handleRequest(request('/pull', { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' }), ctx)).json();
}

/** Every module specifier `file` imports, following relative imports into shared chunks. */
function importsOf(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const code = readFileSync(file, 'utf8');
  // `import` followed by a quote only after a space or a parenthesis: `call: 'import'` in the code is no import;
  // nor is `from` that a quote opens: the string "from" (a field's name, in the server's code and the inspector's page).
  const specifiers = [...code.matchAll(/(?:(?<!["'])\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\()["']([^"']+)["']/g)].map((m) => m[1]!);
  return specifiers.flatMap((s) => (s.startsWith('.') ? importsOf(join(dirname(file), s), seen) : [s]));
}

describe('the built package', () => {
  it('works as ESM', async () => {
    const api = await import(pathToFileURL(join(dist, 'index.js')).href);
    expect(await roundTrip(api)).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'k', value: 1 }] });
  });

  it('works as CommonJS', async () => {
    const api = createRequire(import.meta.url)(join(dist, 'index.cjs'));
    expect(await roundTrip(api)).toMatchObject({ lastMutationIDChanges: { c: 1 } });
  });

  it('ships type declarations for both', () => {
    for (const file of ['index.d.ts', 'index.d.cts']) expect(readFileSync(join(dist, file), 'utf8')).toMatch(/handlePull/);
  });

  // The package's dependencies, and for Deno and Bun the Node modules both runtimes have, for
  // compression and for the descriptor limit that sizes the poke streams.
  it.each([
    ['index', []],
    ['backend', []],
    ['ops', []],
    ['cloudflare', []],
    ['sqlite', []],
    ['postgres', []],
    ['redis', []],
    ['client', []],
    ['store', []],
    ['protocol', []],
    ['deno', ['node:zlib', 'node:buffer', 'node:fs']],
    ['bun', ['node:zlib', 'node:buffer', 'node:fs']],
  ])('the %s entry imports nothing but valibot and @opentelemetry/api (and %j), in ESM and CJS, so it runs in its runtimes', (entry, allowed) => {
    for (const file of [`${entry}.js`, `${entry}.cjs`]) {
      expect([...new Set(importsOf(join(dist, file)))].filter((name) => !['valibot', '@opentelemetry/api', ...allowed].includes(name))).toEqual([]);
      expect(readFileSync(join(dist, file), 'utf8')).not.toMatch(/\bprocess\.|\bBuffer\b|__dirname/);
    }
  });

  it('the entries share one copy of the core, so its classes (HTTPError) are one class everywhere', () => {
    for (const extension of ['.js', '.cjs']) {
      const files = readdirSync(dist).filter((file) => file.endsWith(extension));
      expect(files.filter((file) => /\bclass HTTPError\b|\bHTTPError = (\(_class\d* = )?class\b/.test(readFileSync(join(dist, file), 'utf8')))).toHaveLength(1);
    }
  });
});
