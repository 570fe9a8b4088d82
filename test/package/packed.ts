import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where test/support/global-setup.ts leaves the tarball `npm pack` made. */
export const PACK_DIR = join(ROOT, 'node_modules', '.cache', 'viewsync-pack');

/** The tarball's path. */
export function tarball(): string {
  const [file] = readdirSync(PACK_DIR).filter((name) => name.endsWith('.tgz'));
  if (file === undefined) throw new Error(`No tarball in ${PACK_DIR}: test/support/global-setup.ts packs one`);
  return join(PACK_DIR, file);
}

/**
 * A new project folder, outside the repository, with the packed package installed as a user
 * gets it (the tarball unpacked into node_modules/viewsync) and `dependencies` (packages of this
 * repository's node_modules, which a user would install from npm) linked beside it.
 */
/** What installing the package brings: its `dependencies`. */
const RUNTIME_DEPENDENCIES = ['valibot', '@opentelemetry/api'];

export function userProject(dependencies: readonly string[] = [], files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'viewsync-user-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, 'viewsync'), { recursive: true });
  execFileSync('tar', ['xzf', tarball(), '-C', join(modules, 'viewsync'), '--strip-components=1']);
  for (const name of [...RUNTIME_DEPENDENCIES, ...dependencies]) {
    if (name.includes('/')) mkdirSync(join(modules, name.split('/')[0]!), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
  }
  // Listed as a user's would be: Deno resolves bare imports through package.json.
  const listed = Object.fromEntries(
    ['viewsync', ...RUNTIME_DEPENDENCIES, ...dependencies.filter((name) => !name.startsWith('@types'))].map((name) => [name, '*']),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module', dependencies: listed }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
