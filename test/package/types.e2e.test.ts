import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT, tarball, userProject } from './packed.js';

/**
 * The packed package in a user's strict TypeScript project, with no `skipLibCheck`: the shipped
 * declarations must compile under every module resolution a user may have, on the oldest and
 * newest TypeScript we support, and accept the mutators users write.
 */
const run = promisify(execFile);

/** What a user writes: every entry, mutators typed for the client, and ones that need the user. */
const CONSUMER = `
import { createContext, defineMutator, handleRequest, memoryStorage, type Mutators, type SyncContext, type SyncOptions, type WriteTransaction } from 'viewsync';
import { readChanges, transact, type FeedPage } from 'viewsync/backend';
import { collectGarbage, inspect, routedStorage, type Collected } from 'viewsync/ops';
import { serve } from 'viewsync/node';
import { serve as serveDeno } from 'viewsync/deno';
import { serve as serveBun } from 'viewsync/bun';
import { createSyncObject, routeToObject } from 'viewsync/cloudflare';
import { sqliteStorage } from 'viewsync/sqlite';
import { storageConformance, type ConformanceCheck } from 'viewsync/testing';
import { compareUTF8, type Storage, type StorageTransaction } from 'viewsync/store';
import { PullRequest, type PatchOperation } from 'viewsync/protocol';
import { parse } from 'valibot';
import { postgresNotifier, postgresStorage } from 'viewsync/postgres';
import { connectPokes, type PokeConnection } from 'viewsync/client';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { object, string } from 'valibot';
import { Replicache, type MutatorDefs, type WriteTransaction as ClientWriteTransaction } from 'replicache';

// One mutator source for client and server, typed against the client's transaction.
export const shared = {
  put: async (tx: ClientWriteTransaction, { key, value }: { key: string; value: string }) => {
    await tx.set(key, value);
    return key; // the client lets mutators return a value
  },
  scanAll: async (tx: ClientWriteTransaction) => (await tx.scan({ prefix: 'a' }).entries().toArray()).length,
};
// Server mutators may use what only the server has.
export const serverOnly = {
  stamp: async (tx: WriteTransaction, { key }: { key: string }) => tx.set(key, tx.userID ?? null),
  checked: defineMutator(object({ key: string() }), (tx, { key }) => tx.del(key)),
  inline: async (tx, args: { key: string }) => tx.set(args.key, tx.userID ?? null),
} satisfies Mutators;

const client: MutatorDefs = shared;
// @ts-expect-error the client's transaction has no userID, so a server mutator is not a client one
const notClient: MutatorDefs = { stamp: serverOnly.stamp };

const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: { ...shared, ...serverOnly }, limits: { appCodeMs: 5_000 } });
export const handler = { fetch: (request: Request) => handleRequest(request, ctx) };
export const SyncObject = createSyncObject(() => ({ mutators: shared }));
export const worker = routeToObject({ binding: 'SYNC', space: () => 'main' });
export const starts = [serve, serveDeno, serveBun];
export const onDisk: SyncContext = createContext({ storage: sqliteStorage(new Database('sync.db'), { tablePrefix: 'app_' }), mutators: shared });
const sql = postgres(process.env.DATABASE_URL!, { prepare: false });
export const onPostgres: SyncOptions = { storage: postgresStorage(sql, { schema: 'sync', prepare: false }), mutators: shared, pokes: { notifier: postgresNotifier(sql), coalesceMs: 100 } };
// The backend's and the operators' entries, typed against the app's context.
export const written: Promise<void> = transact(ctx, 'main', (tx) => tx.set('k', 1));
export const feed: Promise<FeedPage> = readChanges(ctx, 'main', { limit: 10 });
export const collected: Promise<Collected> = collectGarbage(ctx);
export const held: Promise<number> = inspect(ctx).then(({ spaces }) => spaces.length);
export const routed = routedStorage({ stores: { a: memoryStorage() } });
// A Replicache instance is what connectPokes takes, as it is.
export const pokes: PokeConnection = connectPokes(new Replicache({ name: 'u', licenseKey: 'k', mutators: shared }), '/sync/poke', { maxDelayMs: 5_000 });
// (PGlite's own declarations need @types/emscripten without skipLibCheck; test/storage checks it.)
export const checks: ConformanceCheck[] = storageConformance(() => memoryStorage(), { runs: 10 });
// A store author's wrapper, from viewsync/store; a protocol user's parse, from viewsync/protocol.
export const logged = (inner: Storage): Storage => ({ transaction: (fn: (tx: StorageTransaction) => Promise<unknown>, options) => inner.transaction(fn, options) }) as Storage;
export const order: number = compareUTF8('a', 'b');
export const request: PullRequest = parse(PullRequest, { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' });
export const put: PatchOperation = { op: 'put', key: 'k', value: 1 };
void client;
void notClient;
`;

const MODES = [
  ['5.9', 'nodenext', 'nodenext'],
  ['5.9', 'esnext', 'bundler'],
  ['5.9', 'commonjs', 'node10'],
  ['5.4', 'nodenext', 'nodenext'],
] as const;

// Each check takes seconds (without skipLibCheck, tsc checks valibot's and Node's declarations too).
describe.concurrent('the packed package in a strict project without skipLibCheck', () => {
  it.each(MODES)(
    'TypeScript %s, module %s, moduleResolution %s',
    async (version, module, moduleResolution) => {
      const dir = userProject(['replicache', '@types', 'postgres'], { 'consumer.ts': CONSUMER });
      if (module === 'commonjs') writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'user-project', private: true }));
      const tsc = join(ROOT, 'node_modules', version === '5.4' ? 'oldest-typescript' : 'typescript', 'bin', 'tsc');
      // better-sqlite3's own types need esModuleInterop for a default import from CommonJS.
      const interop = module === 'commonjs' ? ['--esModuleInterop'] : [];
      const args = [
        ...interop,
        '--strict',
        '--noEmit',
        '--target',
        'es2022',
        '--lib',
        'es2022,dom,dom.iterable',
        '--types',
        'node',
        '--module',
        module,
        '--moduleResolution',
        moduleResolution,
        'consumer.ts',
      ];
      const result = await run(process.execPath, [tsc, ...args], { cwd: dir }).catch((error: { stdout: string }) => error);
      expect(result.stdout).toBe('');
      // Four compiles at once on 2 cores: about 30 s each on a quiet machine, twice that on a busy one.
    },
    180_000,
  );
});

describe('what npm publishes', () => {
  it('the tarball holds the build, README and LICENSE, and no source maps', async () => {
    const { stdout } = await run('tar', ['tzf', tarball()]);
    const files = stdout
      .trim()
      .split('\n')
      .map((file) => file.replace(/^package\//, ''));
    expect(files).toEqual(
      expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/node.d.ts']),
    );
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
    expect(files.every((file) => /^(dist\/|LICENSE$|README\.md$|package\.json$)/.test(file))).toBe(true);
  });

  it('its package.json has what users need and nothing only this repository uses', async () => {
    const { stdout } = await run('tar', ['xzf', tarball(), '-O', 'package/package.json']);
    const manifest = JSON.parse(stdout);
    for (const field of ['scripts', 'devDependencies', 'optionalDependencies', 'allowScripts', 'overrides']) expect(manifest).not.toHaveProperty(field);
    expect(manifest).toMatchObject({
      license: 'MIT',
      repository: expect.any(Object),
      homepage: expect.any(String),
      bugs: expect.any(Object),
      dependencies: { valibot: expect.any(String) },
    });
    // Packing left the repository's own package.json as it was.
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))).toHaveProperty('devDependencies');
  });
});
