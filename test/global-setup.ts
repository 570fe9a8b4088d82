import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Builds `dist/` once before the tests: the runtime tests (Deno, Bun, workerd) load the package
 * as users get it, built, rather than its TypeScript source.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/tsup/dist/cli-default.js'], { cwd: root, stdio: 'pipe' });
}
