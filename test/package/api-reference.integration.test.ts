/**
 * What docs/api.md and the figures quoted across the docs claim, checked against what they
 * describe: the options table names every option of `SyncOptions` and every field of each
 * option's object; the handler row names every path `handleRequest` serves; the command section
 * names every CLI command; and the full pull's cost is quoted as benchmarks.md measured it.
 *
 * Where each list comes from: the options from the TypeScript checker's reading of the type
 * `SyncOptions` exported by src/index.ts (OPTIONS_ENTRY below); the paths from the `suffix:`
 * and `INSPECT` literals of src/server/handle-request.ts, each then requested to show it is
 * served; the commands from the CLI's own help (src/cli/usage.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { HELP } from '../../src/cli/usage.js';
import { createContext, handleRequest, memoryStorage } from '../../src/index.js';
import { ROOT } from './packed.js';

/** The entry point exporting `SyncOptions`: re-point here if the type moves. */
const OPTIONS_ENTRY = 'src/index.ts';
/** The file routing `handleRequest`'s paths. */
const ROUTER = 'src/server/handle-request.ts';

const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const api = text('docs/api.md');

/** Every option of `SyncOptions`, with the fields of each object it may be (none for a function, a record, a list or the store). */
function optionsOfType(): Map<string, string[]> {
  const file = join(ROOT, OPTIONS_ENTRY);
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!).find((symbol) => symbol.name === 'SyncOptions');
  expect(exported, `${OPTIONS_ENTRY} exports SyncOptions`).toBeDefined();
  const symbol = exported!.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported!) : exported!;
  const options = new Map<string, string[]>();
  for (const option of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
    const type = checker.getNonNullableType(checker.getTypeOfSymbol(option));
    const kinds = type.isUnion() ? type.types : [type];
    const objects = kinds.filter((kind) => {
      if (!(kind.flags & ts.TypeFlags.Object) || kind.getCallSignatures().length > 0 || checker.getIndexInfosOfType(kind).length > 0) return false;
      const name = (kind.aliasSymbol ?? kind.getSymbol())?.name;
      return name !== 'Array' && name !== 'ReadonlyArray';
    });
    // The store is a seam of its own (docs/storage.md), not a bag of options.
    options.set(
      option.name,
      option.name === 'storage' ? [] : [...new Set(objects.flatMap((kind) => checker.getPropertiesOfType(kind).map((field) => field.name)))],
    );
  }
  return options;
}

/** The rows of the options table in "## The context": each option's name and its row. */
function optionRows(): Map<string, string> {
  const section = api.slice(api.indexOf('\n## The context\n'), api.indexOf('\n## Mutators and errors\n'));
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const name = /^\| `(\w+)/.exec(line)?.[1];
    if (name !== undefined) rows.set(name, line);
  }
  return rows;
}

describe('docs/api.md', () => {
  it('the options table has a row for every option, naming every field of its object', () => {
    const options = optionsOfType();
    expect(options.size).toBeGreaterThan(20);
    expect(options.get('retention')).toEqual(expect.arrayContaining(['changesMs', 'historyMs']));
    const rows = optionRows();
    const missing = [...options.keys()].filter((option) => !rows.has(option));
    const notOptions = [...rows.keys()].filter((row) => !options.has(row));
    const fieldsLeftOut = [...options].flatMap(([option, fields]) =>
      fields.filter((field) => rows.has(option) && !new RegExp(`\\b${field}\\b`).test(rows.get(option)!)).map((field) => `${option}.${field}`),
    );
    expect({ missing, notOptions, fieldsLeftOut }).toEqual({ missing: [], notOptions: [], fieldsLeftOut: [] });
  });

  it('the handleRequest row names every path it serves', async () => {
    const router = text(ROUTER);
    const paths = [...router.matchAll(/suffix: '(\/[\w-]+)'/g), ...router.matchAll(/const INSPECT = '(\/[\w-]+)'/g)].map(([, path]) => path!);
    expect(paths).toEqual(expect.arrayContaining(['/pull', '/push', '/poke', '/poke-token', '/changes', '/history', '/health', '/_inspect']));
    // Each is served (anything but 404) by a context with every endpoint on, and a path that is none is not.
    const secret = 'a test secret of 32 characters or more, not real';
    const ctx = createContext({
      storage: memoryStorage(),
      mutators: {},
      changes: { secret },
      pokes: { tokenSecret: secret },
      inspector: { secret },
      authenticate: () => 'u',
      onError: () => {},
    });
    const status = async (path: string) => {
      const method = path === '/pull' || path === '/push' ? 'POST' : 'GET';
      const response = await handleRequest(
        new Request(`http://localhost/api${path}${path === '/_inspect' ? '/' : ''}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(method === 'POST' && { body: '{}' }),
        }),
        ctx,
      );
      await response.body?.cancel();
      return response.status;
    };
    for (const path of paths) expect(await status(path), path).not.toBe(404);
    expect(await status('/nothing')).toBe(404);
    const row = api.split('\n').find((line) => line.startsWith('| `handleRequest(request, ctx)`'));
    expect(row).toBeDefined();
    expect(paths.filter((path) => !row!.includes(`\`${path}\``) && !row!.includes(`\`…${path}/\``))).toEqual([]);
  });

  it('the command section names every command of the CLI', () => {
    const commands = Object.keys(HELP).filter((command) => command !== '');
    expect(commands).toEqual(expect.arrayContaining(['inspect', 'directory', 'changes']));
    const section = api.slice(api.indexOf('\n### The `viewsync` command\n'));
    expect(commands.filter((command) => !new RegExp(`\`${command}[\` ]`).test(section))).toEqual([]);
  });
});

describe("the full pull's cost", () => {
  it('is quoted in README and known-limits as benchmarks.md measured it, with one aim', () => {
    const benchmarks = text('docs/benchmarks.md');
    // Every run of 100,000 entries against the memory store: bench:postgres's two, and bench:big-pull's tables.
    const postgres = [...(/^\| full pull of 100k entries \(10 MiB\) \|.*\*\*(\d\.\d+) \/ (\d\.\d+)x\*\*/m.exec(benchmarks) ?? []).slice(1)].map(Number);
    const runs = (store: string) => [
      ...[...benchmarks.matchAll(new RegExp(`^\\| ${store} \\| 100,000 \\|.*\\| (\\d\\.\\d+)x \\(\\d\\.\\d+x\\) \\|$`, 'gm'))].map(([, ratio]) =>
        Number(ratio),
      ),
      ...[...benchmarks.matchAll(new RegExp(`^\\s+\\| ${store} \\| \\d+ ms \\| (\\d\\.\\d+)x \\|`, 'gm'))].map(([, ratio]) => Number(ratio)),
    ];
    const pg = [...postgres, ...runs('PostgreSQL')];
    const sqlite = runs('SQLite');
    expect([pg.length, sqlite.length]).toEqual([4, 2]);
    const range = (ratios: number[]) => `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x`;
    const quoted = {
      readme:
        text('README.md')
          .split('\n')
          .find((line) => line.startsWith('| full pull of 100k entries |')) ?? '',
      knownLimits: /^- A full pull of 100k entries takes[\s\S]*?(?=\n- )/m.exec(text('docs/known-limits.md'))?.[0] ?? '',
      benchmarks: /^\*\*The full pull's cost, as README[\s\S]*?\n\n/m.exec(benchmarks)?.[0] ?? '',
    };
    const ranges = (line: string) => [...line.matchAll(/(\d\.\d+)-(\d\.\d+)x/g)].map(([whole]) => whole);
    expect({ readme: ranges(quoted.readme), knownLimits: ranges(quoted.knownLimits), benchmarks: ranges(quoted.benchmarks) }).toEqual({
      readme: [range(pg)],
      knownLimits: [range(pg), range(sqlite)],
      benchmarks: [range(pg), range(sqlite)],
    });
    // One aim wherever the cost is quoted.
    for (const [where, line] of Object.entries(quoted)) expect(line, where).toMatch(/1\.2x/);
    const row = benchmarks.split('\n').find((line) => line.startsWith('| full pull of 100k entries (10 MiB) |'))!;
    expect(row).not.toMatch(/<= ?1\.3x/);
  });
});
