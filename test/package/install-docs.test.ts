/**
 * The version and how to install it agree everywhere a newcomer reads them: package.json, the
 * starter's package.json, CHANGELOG's release under way, the pins the starter writes and the demo
 * declares, and the README's install-from-a-checkout commands (until the registry has a release,
 * the only way in). `npm pack` names its tarball `<name>-<version>.tgz`: create.e2e.test.ts packs
 * the starter and checks its name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './packed.js';

const json = (path: string) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));
const { version } = json('package.json') as { version: string };
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('the version', () => {
  it("is CHANGELOG's release under way, and the starter's", () => {
    const release = /^## (?:Unreleased \()?(\d+\.\d+\.\d+)\)?$/m.exec(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8'))?.[1];
    expect(release).toBe(version);
    expect(json('create-viewsync/package.json').version).toBe(version);
  });

  it('is taken by the pins the starter writes and the demo declares', () => {
    const starter = /\bviewsync: '([^']+)'/.exec(readFileSync(join(ROOT, 'create-viewsync', 'index.js'), 'utf8'))?.[1];
    const demo = (json('examples/todo/package.json') as { dependencies: Record<string, string> }).dependencies.viewsync;
    for (const [who, range] of [
      ['the starter', starter],
      ['examples/todo', demo],
    ] as const) {
      expect(range, who).toBeDefined();
      expect(semver.satisfies(version, range!), `${who} pins ${range}, which ${version} is not in`).toBe(true);
    }
  });

  it("is the one the README's install-from-a-checkout commands name", () => {
    const start = readme.indexOf('<!-- install: checkout -->');
    expect(start, 'the README has its install-from-a-checkout block').toBeGreaterThan(0);
    const section = readme.slice(start, readme.indexOf('\n## ', start));
    const named = [...section.matchAll(/\b((?:create-)?viewsync)-(\d+\.\d+\.\d+)\.tgz/g)];
    expect(new Set(named.map(([, name]) => name))).toEqual(new Set(['viewsync', 'create-viewsync']));
    for (const [tarball, , release] of named) expect(release, tarball).toBe(version);
    expect(section).toContain('npm ci && npm pack');
    expect(section).toContain('(cd create-viewsync && npm pack)');
  });
});
