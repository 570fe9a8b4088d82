import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './packed.js';

/**
 * The documentation as a reader follows it: README.md, CONTRIBUTING.md, CHANGELOG.md and every
 * page under docs/. Every relative link reaches a file, every `#anchor` a heading of its page (as
 * GitHub names it), the index links every page, and the API reference's export tables name every
 * export of every entry point, and nothing else. Reads the sources only: no build, no package.
 */
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
].filter((page) => existsSync(join(ROOT, page)));
const text = (page: string) => readFileSync(join(ROOT, page), 'utf8');

/** The lines of a page outside fenced code blocks. */
function prose(page: string): string[] {
  let fenced = false;
  return text(page)
    .split('\n')
    .filter((line) => {
      if (/^\s*```/.test(line)) fenced = !fenced;
      else if (!fenced) return true;
      return false;
    });
}

/** The anchors GitHub gives a page's headings: lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(page)) {
    const heading = /^#{1,6} (.+?)#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replaceAll(' ', '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Every link of a page, but in code: `[text](target)` and `![alt](target)`. */
function links(page: string): string[] {
  return prose(page).flatMap((line) => [...line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map(([, target]) => target!));
}

describe('the documentation', () => {
  it('has its pages', () => {
    expect(pages).toEqual(
      expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'docs/README.md', 'docs/api.md', 'docs/troubleshooting.md', 'docs/stability.md']),
    );
  });

  it.each(pages)('%s: every relative link reaches a file, and every #anchor a heading there', (page) => {
    const broken: string[] = [];
    for (const link of links(page)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), decodeURIComponent(path)));
      if (!existsSync(join(ROOT, target))) {
        broken.push(`${link}: no file ${target}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!target.endsWith('.md') || statSync(join(ROOT, target)).isDirectory()) broken.push(`${link}: an anchor into ${target}, which has no headings`);
      else if (!anchors(target).has(anchor)) broken.push(`${link}: no heading #${anchor} in ${target} (it has ${[...anchors(target)].join(', ')})`);
    }
    expect(broken).toEqual([]);
  });

  it('docs/README.md links every page under docs/', () => {
    const linked = new Set(links('docs/README.md').map((link) => link.split('#')[0]));
    const pagesUnderDocs = pages.filter((page) => page.startsWith('docs/') && page !== 'docs/README.md').map((page) => page.slice('docs/'.length));
    expect(pagesUnderDocs.filter((page) => !linked.has(page))).toEqual([]);
  });

  it('the API reference lists every export of every entry point, and nothing that is not one', () => {
    // The entry points: package.json's exports, built from tsup.config.ts's entries.
    const manifest = JSON.parse(text('package.json')) as { exports: Record<string, unknown> };
    const entries = Object.fromEntries([...text('tsup.config.ts').matchAll(/^\s+(\w+): '([^']+\.ts)',$/gm)].map(([, name, file]) => [name!, file!]));
    const subpaths = Object.keys(manifest.exports).filter((subpath) => subpath !== './package.json');
    expect(subpaths.length).toBeGreaterThan(1);
    const sources = Object.fromEntries(
      subpaths.map((subpath) => {
        const name = subpath === '.' ? 'index' : subpath.slice(2);
        expect(entries[name], `tsup.config.ts builds ${subpath}`).toBeDefined();
        return [subpath === '.' ? 'viewsync' : `viewsync/${name}`, entries[name]!];
      }),
    );
    const program = ts.createProgram(Object.values(sources), {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      noEmit: true,
      types: ['node'],
    });
    const checker = program.getTypeChecker();

    // The tables: one per entry point, under "### `viewsync/…`" in "## Every export, by entry point".
    const reference = text('docs/api.md');
    const section = reference.slice(reference.indexOf('\n## Every export, by entry point\n'));
    expect(section.length).toBeGreaterThan(0);
    const documented = new Map<string, Set<string>>();
    let current: Set<string> | undefined;
    for (const line of section.split('\n')) {
      const heading = /^### `(viewsync(?:\/[\w-]+)?)`$/.exec(line)?.[1];
      if (heading !== undefined) documented.set(heading, (current = new Set()));
      else if (/^#{1,3} /.test(line)) current = undefined;
      else if (current !== undefined && line.startsWith('| `')) {
        for (const [, name] of line.split('|')[1]!.matchAll(/`(\w+)/g)) current.add(name!);
      }
    }
    expect([...documented.keys()].sort()).toEqual(Object.keys(sources).sort());

    for (const [entry, file] of Object.entries(sources)) {
      const source = program.getSourceFile(join(ROOT, file)) ?? program.getSourceFile(file);
      expect(source, file).toBeDefined();
      const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(source!)!).map((symbol) => symbol.name);
      const listed = documented.get(entry)!;
      expect({
        entry,
        missing: exported.filter((name) => !listed.has(name)).sort(),
        notExported: [...listed].filter((name) => !exported.includes(name)).sort(),
      }).toEqual({ entry, missing: [], notExported: [] });
    }
  });
});
