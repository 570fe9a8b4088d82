import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './packed.js';

/**
 * The Node floor `engines` states is one every installed package accepts, so that `npm ci` on
 * that Node prints no EBADENGINE warning, and one that is still maintained. Optional packages
 * are left out: npm skips those whose engines do not match, without a word.
 */
interface Locked {
  engines?: { node?: string } | string[];
  optional?: boolean;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Locked> };
const lts = JSON.parse(readFileSync(join(ROOT, '.ci', 'lts', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const floor = semver.minVersion(manifest.engines.node)!;

describe('the supported Node floor', () => {
  it('is a maintained release line: Node 20 ended in April 2026', () => {
    expect(floor.major).toBeGreaterThanOrEqual(22);
  });

  it('is accepted by the engines of every package npm ci installs', () => {
    const refused = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !entry.optional)
      .flatMap(([path, { engines }]) => {
        const range = engines && !Array.isArray(engines) ? engines.node : undefined;
        return range === undefined || semver.satisfies(floor, range) ? [] : [`${path.replace(/^.*node_modules\//, '')} wants node ${range}`];
      });
    expect(refused).toEqual([]);
  });

  it('is the one the README and the production page state', () => {
    const stated = `${floor.major}.${floor.minor}`;
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(`(Node ${stated} or later)`);
    expect(readFileSync(join(ROOT, 'docs', 'production.md'), 'utf8')).toContain(`\`engines\`: \`${manifest.engines.node}\``);
  });

  it("covers every Node release CI tests on besides the machine's own", () => {
    const releases = Object.values(lts.devDependencies).map((spec) => spec.replace(/^npm:node@/, ''));
    expect(releases.length).toBeGreaterThan(0);
    for (const release of releases) expect(semver.satisfies(release, manifest.engines.node), release).toBe(true);
  });
});
