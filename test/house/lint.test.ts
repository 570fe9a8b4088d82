/**
 * The linter's house rule (scripts/biome/no-double-cast.grit): `as unknown as` does not come back
 * into src/ or adapters/ unremarked. Biome runs with the repository's config on a few files in a
 * folder of their own, so nothing is written into the tree other tests read.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';

const DOUBLE_CAST = 'export const n = JSON.parse("1") as unknown as number;\n';
const dir = mkdtempSync(join(tmpdir(), 'viewsync-lint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The files of `files` that Biome reports a diagnostic of the house rule in. */
function flagged(files: Record<string, string>): string[] {
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(ROOT, 'biome.jsonc'), join(dir, 'biome.jsonc'));
  cpSync(join(ROOT, 'scripts', 'biome'), join(dir, 'scripts', 'biome'), { recursive: true });
  for (const [path, code] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), code);
  }
  const biome = join(ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
  const run = spawnSync(process.execPath, [biome, 'lint', '--vcs-enabled=false', '--reporter=github', ...Object.keys(files)], { cwd: dir, encoding: 'utf8' });
  const lines = (run.stdout + run.stderr).split('\n').filter((line) => line.includes('`as unknown as` turns the type checker off'));
  return Object.keys(files).filter((path) => lines.some((line) => line.includes(`file=${join(dir, path)},`)));
}

describe('as unknown as', () => {
  it('is refused in src/ and adapters/, not in tests (which may fake what they like), and passes in src/ with a reason given', () => {
    const files = {
      'src/sync/new.ts': DOUBLE_CAST,
      'adapters/new.ts': DOUBLE_CAST,
      'test/sync/new.test.ts': DOUBLE_CAST,
      'src/base/new.ts': `// biome-ignore lint/plugin/no-double-cast: a reason\n${DOUBLE_CAST}`,
      'src/base/single.ts': 'export const n = JSON.parse("1") as number;\n',
    };
    expect(flagged(files)).toEqual(['src/sync/new.ts', 'adapters/new.ts']);
  });
});
