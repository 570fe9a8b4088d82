import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PACK_DIR } from '../package/packed.js';

/**
 * Packs the package once before the tests, as `npm publish` would (`prepack` builds `dist/` and
 * writes the published package.json): the package tests install that tarball, and the runtime
 * tests (Deno, Bun, workerd) load the built `dist/` rather than the TypeScript source.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  // A minute or more with nothing else printed: say what it is.
  const started = Date.now();
  console.log('Packing viewsync for the e2e project (npm pack: builds dist/, then the tarball)…');
  rmSync(PACK_DIR, { recursive: true, force: true });
  mkdirSync(PACK_DIR, { recursive: true });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', PACK_DIR], {
    cwd: root,
    stdio: 'pipe',
    env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false' },
  });
  if (readdirSync(PACK_DIR).filter((file) => file.endsWith('.tgz')).length !== 1) throw new Error(`npm pack left no tarball in ${PACK_DIR}`);
  console.log(`Packed in ${Math.round((Date.now() - started) / 1000)} s.`);
}
