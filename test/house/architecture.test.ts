/**
 * The house's one-way rule, checked: every import in src/ and adapters/ runs down the layers
 * below (or stays in its own folder), and no files import each other in a cycle. No exceptions.
 * Type-only imports count: a type imported from above is a dependency all the same. Every source
 * file is read, whatever its extension; a folder not in the table takes its nearest placed
 * ancestor's layer; the package's own name is not an import path inside it (tsconfig maps it to
 * src/, where it could close a cycle unseen); and adapters reach the core through its public
 * entry, plus the few internals named in ADAPTER_INTERNALS.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';

/** Lowest first. A folder may import from the folders of lower layers; folders of one layer do not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['src/base'], // errors, UTF-8, replies, renamed options: used by every layer
  ['src/protocol'], // the wire messages
  ['src/telemetry'], // traces and metrics, recorded by any layer above
  ['src/storage'], // the one storage seam and its drivers
  // sync's rooms, lowest first (src/sync/README.md says what each is for):
  ['src/sync/batching'], // requests sharing the store's round trips: group commits, shared reads
  ['src/sync/version'], // a space as stored: keys, records, cookies, patches, and the session's contract
  ['src/sync/transactions'], // what app code runs in: read and write transactions, mutators, limits, quotas
  ['src/sync/feed', 'src/sync/schema'], // the change log and its feed; older clients' schemas
  ['src/sync/history'], // the past of a space: as-of reads, checkpoints, erasure, its size
  ['src/sync/session'], // the global version strategy: a space's session, its pulls, its housekeeping
  ['src/sync/dumps', 'src/sync/migrations'], // whole spaces exported and imported; data migrations
  ['src/sync'], // a push and a pull processed, and the views they read through
  ['src/route'], // spaces spread over several stores, and moved between them
  ['src/poke'], // poke streams and notifiers
  ['src/context'], // a context, its resolved state, and what follows a commit
  ['src/server', 'src/backend'], // the two doors: HTTP endpoints, and the app's backend
  ['src/inspector'], // the operators' web page, served through the server's door, reading through the backend's
  ['src', 'src/cli', 'src/testing', 'src/client'], // the package's entry points
  ['adapters'], // one per runtime
];

/** The extensions of source files (declarations aside). */
const SOURCE = /(?<!\.d)\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

/** What adapters may import from src/ besides its public entry, and why. */
const ADAPTER_INTERNALS: Record<string, string> = {
  'src/server/handle-request.ts': 'requestReply: a reply the adapter writes itself, streamed and compressed',
  'src/base/reply.ts': 'the Reply that requestReply returns',
  'src/base/drained.ts': 'waiting for a Node stream to take more, as the CLI does',
  'src/base/direct-stream.ts': 'DirectStream: the Node adapter writes a poke stream straight to its socket',
  'src/base/request-stand-in.ts': "BODY_BYTES and FETCH_REQUEST: the Node adapter's stand-in for a small body's Request",
  'src/base/renamed.ts': "refuseRenamed, for the adapters' own renamed options",
  'src/context/drain.ts': 'isDraining, which a server stopping consults',
  'src/context/state.ts': 'checkContext, at server start',
  'src/storage/durable-object.ts': 'the Durable Object store, re-exported by the Cloudflare adapter',
};

/**
 * The only files outside src/route that know routing exists: the entry that exports it (ops), the
 * backend's `moveSpace`, and the CLI, which builds a routed storage from its `--store` flags and
 * moves spaces and checks directories. Everything else sees a store made of several through the
 * storage seam's optional `parts`.
 */
const ROUTING_AWARE = ['src/backend/move.ts', 'src/cli/main.ts', 'src/cli/store.ts', 'src/ops.ts'];

const placed = new Map(LAYERS.flatMap((folders, i) => folders.map((folder) => [folder, i] as const)));
/** A folder's layer: its own row, or its nearest placed ancestor's. */
const rank = (folder: string): number | undefined => placed.get(folder) ?? (folder.includes('/') ? rank(dirname(folder)) : undefined);
/** The placed folder a file's folder belongs to: imports within it go any way. */
const room = (folder: string): string | undefined => (placed.has(folder) ? folder : folder.includes('/') ? room(dirname(folder)) : undefined);
const files = [...sources('src'), ...sources('adapters')];
const imports = new Map(files.map((file) => [file, importsOf(file)]));

describe('the layers', () => {
  it('place every folder of src/ and adapters/', () => {
    const unplaced = [...new Set(files.map(dirname))].filter((folder) => rank(folder) === undefined);
    expect(unplaced).toEqual([]);
  });

  it("give each of sync's rooms a row of its own", () => {
    // A room no row names would take the sync root's rank, above its siblings, unseen.
    const rooms = readdirSync(join(ROOT, 'src/sync'), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(rooms.map(({ name }) => `src/sync/${name}`).filter((room) => !placed.has(room))).toEqual([]);
  });

  it('are only ever imported downwards', () => {
    const upward: string[] = [];
    for (const [file, targets] of imports) {
      for (const target of targets) {
        const from = dirname(file);
        const to = dirname(target);
        if (room(from) !== room(to) && !(rank(to)! < rank(from)!)) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('hold no import cycle', () => {
    expect(cycles()).toEqual([]);
  });

  it('never import the package by its own name from inside it', () => {
    expect(files.flatMap((file) => bareImportsOf(file).map((name) => `${file} -> ${name}`))).toEqual([]);
  });

  it('let adapters reach src/ only through its entry and the internals named, each for a reason', () => {
    const reached = new Set<string>();
    const outside: string[] = [];
    for (const [file, targets] of imports) {
      if (!file.startsWith('adapters/')) continue;
      for (const target of targets.filter((each) => each.startsWith('src/'))) {
        if (target === 'src/index.ts') continue;
        if (target in ADAPTER_INTERNALS) reached.add(target);
        else outside.push(`${file} -> ${target}`);
      }
    }
    expect(outside).toEqual([]);
    // The list stays short and true: nothing on it that no adapter uses.
    expect(Object.keys(ADAPTER_INTERNALS).filter((internal) => !reached.has(internal))).toEqual([]);
  });

  it('keep routing behind the storage seam: only the entry and the movers import src/route', () => {
    const aware = files.filter((file) => !file.startsWith('src/route/') && imports.get(file)!.some((target) => target.startsWith('src/route/')));
    expect(aware.sort()).toEqual(ROUTING_AWARE);
  });

  it('would catch what they exist to catch', () => {
    // A folder no row names takes its ancestor's layer; one outside every row is unplaced.
    expect(rank('src/sync/batching/extra')).toBe(rank('src/sync/batching'));
    expect(room('src/sync/batching/extra')).toBe('src/sync/batching');
    expect(rank('lib/extra')).toBeUndefined();
    // A room of sync has a rank of its own: below the sync root, above the storage layer.
    expect(
      rank('src/storage')! < rank('src/sync/batching')! &&
        rank('src/sync/version')! < rank('src/sync/session')! &&
        rank('src/sync/session')! < rank('src/sync')!,
    ).toBe(true);
    // A bare import of the package, and a source that is not TypeScript, are read.
    expect(bareImports("import { x } from 'viewsync';\nexport * from 'viewsync/node';\nimport 'node:fs';")).toEqual(['viewsync', 'viewsync/node']);
    expect(SOURCE.test('a.mts') && SOURCE.test('b.js') && SOURCE.test('c.tsx') && !SOURCE.test('d.d.ts') && !SOURCE.test('e.md')).toBe(true);
  });
});

function bareImports(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map(({ fileName }) => fileName).filter((name) => name === 'viewsync' || name.startsWith('viewsync/'));
}

function bareImportsOf(file: string): string[] {
  return bareImports(readFileSync(join(ROOT, file), 'utf8'));
}

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => SOURCE.test(name))
    .map((name) => join(folder, name));
}

/** The repository files `file` imports (static, dynamic, type-only and re-exports alike). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolveSource(relative(ROOT, resolve(ROOT, dirname(file), name))));
}

/** The source file an import path names: a `.js` path names its `.ts` file when there is one. */
function resolveSource(path: string): string {
  if (existsSync(join(ROOT, path))) return path;
  const typescript = path.replace(/\.(m|c)?js$/, (_, kind: string | undefined) => `.${kind ?? ''}ts`);
  return existsSync(join(ROOT, typescript)) ? typescript : path;
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
