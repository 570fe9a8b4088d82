/**
 * The house's one-way rule, checked: every import in src/ and adapters/ runs down the layers
 * below (or stays in its own folder), and no files import each other in a cycle. No exceptions.
 * Type-only imports count: a type imported from above is a dependency all the same.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './package/packed.js';

/** Lowest first. A folder may import from the folders of lower layers; folders of one layer do not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['src/base'], // errors, UTF-8, replies, renamed options: used by every layer
  ['src/protocol'], // the wire messages
  ['src/telemetry'], // traces and metrics, recorded by any layer above
  ['src/storage'], // the one storage seam and its drivers
  ['src/sync'], // the data model on top of storage
  ['src/route'], // spaces spread over several stores, and moved between them
  ['src/poke'], // poke streams and notifiers
  ['src/context'], // a context, its resolved state, and what follows a commit
  ['src/server', 'src/backend'], // the two doors: HTTP endpoints, and the app's backend
  ['src', 'src/cli', 'src/testing', 'src/client'], // the package's entry points
  ['adapters'], // one per runtime
];

const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((folder) => [folder, i] as const)));
const files = [...sources('src'), ...sources('adapters')];
const imports = new Map(files.map((file) => [file, importsOf(file)]));

describe('the layers', () => {
  it('place every folder of src/ and adapters/', () => {
    const unplaced = [...new Set(files.map(dirname))].filter((folder) => !rank.has(folder));
    expect(unplaced).toEqual([]);
  });

  it('are only ever imported downwards', () => {
    const upward: string[] = [];
    for (const [file, targets] of imports) {
      for (const target of targets) {
        const from = dirname(file);
        const to = dirname(target);
        if (from !== to && !(rank.get(to)! < rank.get(from)!)) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('hold no import cycle', () => {
    expect(cycles()).toEqual([]);
  });
});

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(folder, name));
}

/** The repository files `file` imports (static, dynamic, type-only and re-exports alike). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => relative(ROOT, resolve(ROOT, dirname(file), name)).replace(/\.js$/, '.ts'));
}

/** Every strongly connected group of more than one file (Tarjan's algorithm). */
function cycles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const target of imports.get(file) ?? []) {
      if (!imports.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (stack.includes(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const group = stack.splice(stack.indexOf(file));
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}
