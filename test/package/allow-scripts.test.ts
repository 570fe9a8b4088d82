/**
 * npm 11 asks a project to review each install script in its tree (`allowScripts`) and warns at
 * every `npm ci` of those it does not name: package.json names each one the lock file installs,
 * run (true) or refused (false), and nothing else.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from './packed.js';

const json = (path: string) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));

it('allowScripts names every package in the lock file with an install script, and only those', () => {
  const { allowScripts } = json('package.json') as { allowScripts: Record<string, boolean> };
  const { packages } = json('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
  const scripted = new Set(
    Object.entries(packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.split('node_modules/').at(-1)!),
  );
  expect(new Set(Object.keys(allowScripts))).toEqual(scripted);
});
