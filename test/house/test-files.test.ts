/**
 * Tests are findable and in the right project by their names alone: each sits in a folder by what
 * it tests, never at test/'s root, and its suffix (vitest.config.ts) picks its project.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';

describe('the test files', () => {
  it("sit in folders, none at test/'s root", () => {
    expect(readdirSync(join(ROOT, 'test')).filter((name) => name.endsWith('.ts'))).toEqual([]);
  });

  it('carry at most one project suffix', () => {
    const files = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.test.ts'));
    expect(files.length).toBeGreaterThan(80);
    expect(files.filter((name) => (name.match(/\.(e2e|integration|workerd)\./g) ?? []).length > 1)).toEqual([]);
  });
});
