/**
 * The package's entry points, each with exactly the names listed here, so that a name added to
 * the wrong entry is seen in review; no name in two entries without the reason written beside
 * it; and every path of the exports map built by tsup.config.ts, typed for `node10` resolution
 * (typesVersions) and described in docs/stability.md. Reads the sources only: no build.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';

/** Every entry point's exports, by audience first: the app's, its backend's, the operators'. */
const EXPORTS: Record<string, readonly string[]> = {
  viewsync: [
    'createContext',
    'SyncContext',
    'SyncOptions',
    'ErrorInfo',
    'CorsOptions',
    'handleRequest',
    'handlePull',
    'handlePush',
    'handlePoke',
    'pokeToken',
    'PokeOptions',
    'localNotifier',
    'Notifier',
    'Unsubscribe',
    'ChangeDetail',
    'defineMutator',
    'InvalidArgsError',
    'Mutator',
    'Mutators',
    'StandardSchemaV1',
    'ReadTransaction',
    'WriteTransaction',
    'ScanOptions',
    'ScanIndexOptions',
    'IndexKey',
    'DeepReadonly',
    'ScanResult',
    'ScanIterator',
    'emit',
    'HTTPError',
    'TemporaryError',
    'HTTPErrorOptions',
    'Issue',
    'UnknownMutatorError',
    'MutatorTimeoutError',
    'View',
    'ViewRequest',
    'IndexDefinition',
    'IndexDefinitions',
    'FirstSyncOptions',
    'FirstSyncOrder',
    'FirstSyncOrderRequest',
    'SchemaOptions',
    'OlderSchema',
    'MutationUpgrade',
    'ReadDowngrade',
    'MutationUpgradeError',
    'DowngradeError',
    'memoryStorage',
    'Storage',
    'JSONValue',
  ],
  'viewsync/backend': [
    'transact',
    'mutate',
    'TransactOptions',
    'read',
    'ReadOptions',
    'ChangeFeedOptions',
    'readChanges',
    'followChanges',
    'readAllChanges',
    'ReadChangesOptions',
    'FollowChangesOptions',
    'ReadAllChangesOptions',
    'StoreFeedPage',
    'ChangesGoneError',
    'ChangeCursorError',
    'FeedChange',
    'FeedPage',
    'ChangeOrigin',
    'RevertCause',
    'Erased',
    'REJECTED_TOPIC',
    'RejectedMutation',
    'KeptRejection',
    'handleChanges',
    'WebhookOptions',
    'startWebhooks',
    'WebhookRunner',
    'WebhookRunnerOptions',
    'deliverWebhooks',
    'replayWebhook',
    'enableWebhook',
    'DeliveryRound',
    'EnableWebhookOptions',
    'WebhookDelivery',
    'WebhookDeliveries',
    'Gap',
    'changeFeedStatus',
    'turnOffChangeFeed',
    'FeedStatus',
    'verifyWebhook',
    'WebhookSignatureError',
    'VerifyWebhookOptions',
    'HistoryOptions',
    'at',
    'readHistory',
    'restoreSpace',
    'revertChanges',
    'eraseData',
    'HistoryGoneError',
    'ERASED_TOPIC',
    'AtOptions',
    'AsOf',
    'ReadHistoryOptions',
    'HistoryPage',
    'RestoreOptions',
    'RestoreResult',
    'RevertOptions',
    'RevertResult',
    'EraseResult',
    'EraseTarget',
    'PlannedChange',
    'RevertConflict',
    'ConflictPolicy',
    'LoggedChange',
    'handleHistory',
  ],
  'viewsync/ops': [
    'collectGarbage',
    'CollectOptions',
    'Collected',
    'RetentionOptions',
    'InspectorOptions',
    'InspectorAction',
    'checkHealth',
    'Health',
    'HealthOptions',
    'drain',
    'DrainOptions',
    'DEFAULT_LIMITS',
    'MAX_VALUE_DEPTH',
    'Limits',
    'QuotaExceededError',
    'SpaceQuota',
    'Quotas',
    'RateOptions',
    'inspect',
    'SpaceSummary',
    'SpaceDetail',
    'GroupSummary',
    'StagingSummary',
    'ChangeLogSummary',
    'WebhookSummary',
    'exportSpace',
    'ExportOptions',
    'ExportProgress',
    'importSpace',
    'ImportOptions',
    'ImportProgress',
    'ImportResult',
    'SkippedClient',
    'DumpError',
    'DumpSource',
    'StagingLostError',
    'defineMigration',
    'runMigration',
    'migrationStatus',
    'Migration',
    'MigrationOptions',
    'MigrationProgress',
    'MigrationResult',
    'SpaceMigration',
    'storeNotifier',
    'StoreNotifier',
    'StoreNotifierOptions',
    'routedStorage',
    'RoutedStorage',
    'RoutedStorageOptions',
    'Placement',
    'moveSpace',
    'MoveOptions',
    'MoveProgress',
    'MoveResult',
    'RouteError',
  ],
  'viewsync/node': [
    'serve',
    'NodeServeOptions',
    'createListener',
    'ListenerOptions',
    'stopServer',
    'nodeServerOptions',
    'NodeTimeoutOptions',
    'ServeOptions',
    'StopOptions',
    'SyncServer',
    'CompressionOptions',
  ],
  'viewsync/deno': ['serve', 'DenoServeOptions', 'ServeOptions', 'StopOptions', 'SyncServer', 'CompressionOptions'],
  'viewsync/bun': ['serve', 'BunServeOptions', 'ServeOptions', 'StopOptions', 'SyncServer', 'CompressionOptions'],
  'viewsync/cloudflare': [
    'createWorker',
    'createSyncObject',
    'routeToObject',
    'RouteOptions',
    'DurableObjectNamespace',
    'durableObjectStorage',
    'DurableObjectStorage',
  ],
  'viewsync/sqlite': ['sqliteStorage', 'SQLiteStorageOptions', 'SQLiteDatabase', 'SQLiteStatement'],
  'viewsync/postgres': [
    'postgresStorage',
    'PostgresStorage',
    'PostgresStorageOptions',
    'PostgresClient',
    'PgPool',
    'PgPoolClient',
    'StandbyStats',
    'clientPerTransaction',
    'PgClient',
    'postgresNotifier',
    'PostgresNotifierClient',
    'PostgresNotifierOptions',
  ],
  'viewsync/redis': ['redisNotifier', 'RedisNotifierClient', 'RedisNotifierSubscriber', 'RedisNotifierOptions'],
  'viewsync/store': [
    'Storage',
    'StorageTransaction',
    'TransactionOptions',
    'WriteLane',
    'StorageScanOptions',
    'StoredValue',
    'RangeRead',
    'RangeRow',
    'StoreParts',
    'compareUTF8',
  ],
  'viewsync/protocol': [
    'PullRequest',
    'PullRequestV0',
    'PullRequestV1',
    'PushRequest',
    'Mutation',
    'PatchOperation',
    'PullResponseV0',
    'PullResponseV1',
    'ClientStateNotFoundResponse',
    'VersionNotSupportedResponse',
    'JSONValue',
  ],
  'viewsync/testing': ['storageConformance', 'ConformanceCheck', 'ConformanceOptions', 'AssertionError'],
  'viewsync/client': ['connectPokes', 'PokeConnection', 'PokeConnectionOptions', 'PokeTarget', 'PokeStreamError', 'emit'],
};

/** The names more than one entry exports, and why. */
const SHARED: Record<string, string> = {
  Storage: "the type of the app's `storage` option, and the seam a store author implements (viewsync/store)",
  JSONValue: "what a mutator reads and writes, and the wire's values (viewsync/protocol)",
  emit: 'the outbox, in server mutators and in mutators shared with the browser, which must not import the server (viewsync/client)',
  ...Object.fromEntries(
    ['serve', 'ServeOptions', 'StopOptions', 'SyncServer', 'CompressionOptions'].map((name) => [
      name,
      'every runtime exports the same names, so switching runtime changes one import path',
    ]),
  ),
};

/** A ratchet on an audience's entry: today's largest (viewsync/backend's 65), never more; the aim is about 40. */
const AUDIENCE_SIZE = 65;

type Manifest = { exports: Record<string, unknown>; typesVersions: { '*': Record<string, string[]> } };
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
const tsup = readFileSync(join(ROOT, 'tsup.config.ts'), 'utf8');
const built = Object.fromEntries([...tsup.matchAll(/^\s+(\w+): '([^']+\.ts)',$/gm)].map(([, name, file]) => [name!, file!]));
/** The entry points: each one's build name (tsup.config.ts) and how a user imports it. */
const entries = Object.keys(manifest.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => (subpath === '.' ? { name: 'index', specifier: 'viewsync' } : { name: subpath.slice(2), specifier: `viewsync/${subpath.slice(2)}` }));

describe('the entry points', () => {
  it('are the paths of the exports map, each built by tsup.config.ts and typed for node10 resolution', () => {
    expect(entries.map(({ specifier }) => specifier).sort()).toEqual(Object.keys(EXPORTS).sort());
    for (const { name } of entries) {
      expect(built[name], `tsup.config.ts builds ${name}`).toBeDefined();
      if (name !== 'index') expect(manifest.typesVersions['*'][name], `typesVersions names ${name}`).toEqual([`./dist/${name}.d.ts`]);
    }
  });

  it.each(Object.keys(EXPORTS))('%s exports exactly the names listed', (specifier) => {
    const { name } = entries.find((entry) => entry.specifier === specifier)!;
    expect(exportsOf(built[name]!).sort()).toEqual([...EXPORTS[specifier]!].sort());
  });

  it('export a name from more than one entry only for the reason written beside it in SHARED', () => {
    const seen = new Map<string, number>();
    for (const names of Object.values(EXPORTS)) for (const name of names) seen.set(name, (seen.get(name) ?? 0) + 1);
    expect(
      [...seen]
        .filter(([, count]) => count > 1)
        .map(([name]) => name)
        .sort(),
    ).toEqual(Object.keys(SHARED).sort());
  });

  it('by audience stay small enough to read in a minute', () => {
    for (const specifier of ['viewsync', 'viewsync/backend', 'viewsync/ops']) expect(EXPORTS[specifier]!.length, specifier).toBeLessThanOrEqual(AUDIENCE_SIZE);
  });

  it('are each described in docs/stability.md, with what it is for and its stability, and nothing else is', () => {
    const page = readFileSync(join(ROOT, 'docs', 'stability.md'), 'utf8');
    const rows = page
      .slice(page.indexOf('\n## What is public API\n'))
      .split('\n## ')[1]!
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    const described: string[] = [];
    for (const row of rows) {
      const [paths, purpose, stability] = row
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      expect(purpose, row).toMatch(/\w/);
      expect(stability, row).toMatch(/\w/);
      described.push(...[...paths!.matchAll(/`([^`]+)`/g)].map(([, path]) => path!));
    }
    expect(described.sort()).toEqual(
      Object.keys(manifest.exports)
        .map((subpath) => (subpath === '.' ? 'viewsync' : `viewsync/${subpath.slice(2)}`))
        .sort(),
    );
  });
});

/** One program over every entry's source, made once: a program per entry would take as long each. */
let program: ts.Program | undefined;

/** The names a source file exports, as TypeScript resolves them (re-exports followed). */
function exportsOf(file: string): string[] {
  program ??= ts.createProgram(
    entries.map(({ name }) => join(ROOT, built[name]!)),
    { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, noEmit: true, types: ['node'] },
  );
  const checker = program.getTypeChecker();
  return checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, file))!)!).map((symbol) => symbol.name);
}
