import { parseArgs } from 'node:util';
import { exportSpace, ReaderIdleError } from '../backend/export.js';
import { importSpace } from '../backend/import.js';
import { inspect, type SpaceSummary, type WebhookSummary } from '../backend/inspect.js';
import { DumpError } from '../backend/lines.js';
import { StagingLostError } from '../sync/dumps/import-batch.js';
import { allSpaces, collectGarbage } from '../context/collect-garbage.js';
import { moveSpace } from '../backend/move.js';
import { followChanges, readAllChanges, readChanges } from '../backend/changes.js';
import { ChangeCursorError, ChangesGoneError, type FeedPage, parseCursor } from '../sync/feed/feed-pages.js';
import { checkDirectory, repairDirectory } from '../route/directory.js';
import { RouteError } from '../route/route-record.js';
import { type Router, routerOf } from '../route/routed-storage.js';
import { locateWhereHeld } from '../route/survey.js';
import type { SyncContext, SyncOptions } from '../context/context.js';
import { createContext } from '../inspector/attach.js';
import { DEFAULT_RETENTION_MS } from '../context/state.js';
import { drained } from '../base/drained.js';
import { duration, formatDuration, retentionDuration } from './duration.js';
import { CLIError, openStore, type OpenStore, type StoreOptions } from './store.js';
import { quotaCell, quotaOption } from './quota.js';
import { HELP, UsageError } from './usage.js';
import { feedCommand, webhookCommand } from './feed-commands.js';
import { date, print, table } from './output.js';
import { printRejected, schemaCell } from './schema-output.js';
import { migrateCommand, migrationStatusCommand, printMigrations } from './migrate-command.js';
import { eraseArgs, historyArgs, type HistoryFlags, restoreArgs, revertArgs } from './history-args.js';
import { historyCommand } from './history-command.js';
import { restoreCommand, revertCommand } from './restore-commands.js';
import { eraseCommand } from './erase-command.js';
import { webCommand } from './web-command.js';
import { HistoryGoneError } from '../backend/history.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { nearestName } from '../base/nearest-name.js';

/** Options by name, and the commands that take each (those without a list: every command). */
const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean', for: ['inspect', 'gc', 'directory', 'feed', 'migrate', 'history', 'restore', 'revert', 'erase'] },
  'quota-entries': { type: 'string', for: ['inspect'] },
  'quota-bytes': { type: 'string', for: ['inspect'] },
  'quota-history-bytes': { type: 'string', for: ['inspect'] },
  web: { type: 'boolean', for: ['inspect'] },
  port: { type: 'string', for: ['inspect'] },
  'read-only': { type: 'boolean', for: ['inspect'] },
  quiet: { type: 'boolean', for: ['export', 'import', 'move', 'migrate'] },
  merge: { type: 'boolean', for: ['import'] },
  from: { type: 'string', for: ['import'] },
  'allow-format-1': { type: 'boolean', for: ['import'] },
  'skip-clients': { type: 'boolean', for: ['import'] },
  'idle-timeout': { type: 'string', for: ['export'] },
  // A dump's history (format 4): the change log's rows too.
  history: { type: 'boolean', for: ['export', 'import'] },
  space: { type: 'string', for: ['gc', 'migrate'] },
  module: { type: 'string', for: ['migrate'] },
  batch: { type: 'string', for: ['migrate'] },
  status: { type: 'boolean', for: ['migrate'] },
  'client-groups': { type: 'string', for: ['gc'] },
  tombstones: { type: 'string', for: ['gc'] },
  changes: { type: 'string', for: ['gc'] },
  'keep-history': { type: 'string', for: ['gc'] },
  after: { type: 'string', for: ['changes', 'history'] },
  at: { type: 'string', for: ['history'] },
  limit: { type: 'string', for: ['history'] },
  prefix: { type: 'string', for: ['history', 'restore', 'erase'] },
  key: { type: 'string', for: ['erase'] },
  user: { type: 'string', for: ['revert', 'erase'] },
  'client-group': { type: 'string', for: ['revert'] },
  mutator: { type: 'string', for: ['revert'] },
  mutation: { type: 'string', for: ['revert'] },
  versions: { type: 'string', for: ['revert'] },
  since: { type: 'string', for: ['revert'] },
  'on-conflict': { type: 'string', for: ['revert'] },
  'dry-run': { type: 'boolean', for: ['restore', 'revert'] },
  follow: { type: 'boolean', for: ['changes'] },
  all: { type: 'boolean', for: ['changes', 'webhook'] },
  'after-gap': { type: 'boolean', for: ['webhook'] },
  poll: { type: 'string', for: ['changes'] },
  to: { type: 'string', for: ['move', 'restore'] },
  'switch-timeout': { type: 'string', for: ['move'] },
  store: { type: 'string', multiple: true },
  directory: { type: 'string' },
  sqlite: { type: 'string' },
  postgres: { type: 'string' },
  schema: { type: 'string' },
  'table-prefix': { type: 'string' },
  'connect-timeout': { type: 'string' },
} as const;

type Options = StoreOptions &
  HistoryFlags & {
    json?: boolean;
    'quota-entries'?: string;
    'quota-bytes'?: string;
    'quota-history-bytes'?: string;
    web?: boolean;
    port?: string;
    'read-only'?: boolean;
    quiet?: boolean;
    merge?: boolean;
    from?: string;
    'allow-format-1'?: boolean;
    'skip-clients'?: boolean;
    'idle-timeout'?: string;
    history?: boolean;
    space?: string;
    'client-groups'?: string;
    tombstones?: string;
    changes?: string;
    'keep-history'?: string;
    after?: string;
    follow?: boolean;
    all?: boolean;
    'after-gap'?: boolean;
    poll?: string;
    to?: string;
    'switch-timeout'?: string;
    module?: string;
    batch?: string;
    status?: boolean;
  };

/** Runs the CLI on `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let store: OpenStore | undefined;
  try {
    const { values, positionals } = parse(argv);
    const [command = '', ...rest] = positionals;
    if (!(command in HELP) || command === '') {
      if (values.help || command === 'help') return (print(HELP[rest[0] ?? ''] ?? HELP['']!), 0);
      // No command did nothing that was asked: the help goes where errors go, and the exit says so.
      if (command === '') return fail(`${HELP['']}\n\nviewsync: give a command (above)`, 2);
      throw new UsageError(
        `Unknown command ${JSON.stringify(command)}${didYouMean(
          command,
          Object.keys(HELP).filter((name) => name !== ''),
        )}`,
      );
    }
    if (values.help) return (print(HELP[command]!), 0);
    for (const name of Object.keys(values) as Array<keyof typeof OPTIONS>) {
      const only: readonly string[] | undefined = 'for' in OPTIONS[name] ? (OPTIONS[name] as { for: readonly string[] }).for : undefined;
      if (only !== undefined && !only.includes(command)) throw new UsageError(`${command} takes no --${name}`);
    }
    const options = values as Options;
    switch (command) {
      case 'inspect': {
        const space = operand(command, rest, 0);
        const quotas = quotaOption(options['quota-entries'], options['quota-bytes'], options['quota-history-bytes']);
        if (options.web) {
          if (space !== undefined || options.json) throw new UsageError('inspect --web shows every space in the browser: it takes no SPACE or --json');
          const readOnly = options['read-only'] === true;
          // Read-only, it opens the store as inspect does (beside a server holding a SQLite file); else its actions write.
          const open = (store = await openStore(options, { readOnly }));
          return await webCommand((secret) => context(open, { quotas, inspector: { secret, readOnly } }), options.port);
        }
        if (options.port !== undefined || options['read-only']) throw new UsageError('--port and --read-only go with --web');
        store = await openStore(options, { readOnly: true });
        if (space !== undefined) await checkWhereHeld(store, space, command);
        if (space !== undefined) await checkExists(store, space, { follow: false });
        await inspectCommand(context(store, { quotas }), space, options);
        return 0;
      }
      case 'export': {
        const space = operand(command, rest, 1)!;
        const idle = duration(options['idle-timeout'], '--idle-timeout', IDLE_TIMEOUT_MS);
        store = await openStore(options, { readOnly: true });
        await checkWhereHeld(store, space, command);
        await exportCommand(context(store), space, idle, options);
        return 0;
      }
      case 'import': {
        const space = operand(command, rest, 1)!;
        if (process.stdin.isTTY) throw new UsageError(`import reads the dump from stdin: viewsync import ${quoteArg(space)} < dump.ndjson`);
        store = await openStore(options, { create: true });
        await checkWhereHeld(store, space, command);
        await importCommand(context(store), space, options);
        return 0;
      }
      case 'move': {
        const space = operand(command, rest, 1)!;
        if (options.to === undefined) throw new UsageError('move needs --to NAME, the store to move the space to');
        if ((options.store ?? []).length < 2)
          throw new UsageError('move moves a space between the stores of a routed storage: give each as --store NAME=URL, as the servers name them');
        const switchTimeoutMs = duration(options['switch-timeout'], '--switch-timeout', 2_000);
        store = await openStore(options);
        const names = Object.keys(store.storage.parts?.stores ?? {});
        if (!names.includes(options.to)) throw new UsageError(`--to ${JSON.stringify(options.to)} is not one of the --store names (${names.join(', ')})`);
        await moveCommand(context(store), space, options.to, switchTimeoutMs, options);
        return 0;
      }
      case 'directory': {
        const [action] = rest;
        if (action !== 'check' && action !== 'repair')
          throw new UsageError(
            `directory takes check or repair${rest.length === 0 ? '' : `, got ${JSON.stringify(rest.join(' '))}`}: viewsync directory check --store NAME=URL… --directory NAME`,
          );
        if (rest.length > 1) throw new UsageError(`directory ${action} takes no SPACE: it looks at every space`);
        if ((options.store ?? []).length === 0)
          throw new UsageError(
            `directory ${action} works on the stores of a routed storage: give each as --store NAME=URL, as the servers name them, and --directory NAME`,
          );
        if (options.directory === undefined) throw new UsageError(`directory ${action} needs --directory NAME, the store that keeps the servers' directory`);
        store = await openStore(options, { readOnly: action === 'check' });
        return await directoryCommand(routerOf(store.storage)!, action, options);
      }
      case 'changes': {
        if (options.all && rest.length > 0) throw new UsageError('changes takes a SPACE or --all, not both');
        const space = options.all ? undefined : operand(command, rest, 1)!;
        const pollMs = duration(options.poll, '--poll', 1_000);
        if (space !== undefined) {
          try {
            parseCursor(options.after ?? '0');
          } catch (error) {
            throw new UsageError(`--after: ${(error as Error).message}`);
          }
        }
        store = await openStore(options, { readOnly: true });
        if (space !== undefined) await checkWhereHeld(store, space, command);
        if (space !== undefined) await checkExists(store, space, { follow: options.follow === true });
        await changesCommand(context(store), space, options.after, options.follow === true, pollMs);
        return 0;
      }
      case 'feed': {
        const [action, ...extra] = rest;
        if ((action !== undefined && action !== 'status' && action !== 'off') || extra.length > 0)
          throw new UsageError(`feed takes status or off, got ${JSON.stringify(rest.join(' '))}`);
        store = await openStore(options, { readOnly: action !== 'off' });
        return await feedCommand(context(store), action, options.json === true);
      }
      case 'webhook': {
        store = await openStore(options);
        return await webhookCommand(context(store), rest, options);
      }
      case 'migrate': {
        const [name, ...extra] = rest;
        if (name === undefined || extra.length > 0) throw new UsageError(`migrate takes one NAME, the migration's: viewsync migrate NAME --module FILE`);
        if (!options.status && options.module === undefined)
          throw new UsageError('migrate needs --module FILE, the module that exports the migration (or --status, to see where it stands)');
        if (options.status && (options.module !== undefined || options.batch !== undefined))
          throw new UsageError('migrate --status only reads: it takes no --module or --batch');
        const batch = options.batch === undefined ? undefined : Number(options.batch);
        if (batch !== undefined && !(Number.isInteger(batch) && batch >= 1 && batch <= 10_000))
          throw new UsageError(`--batch takes a number of entries from 1 to 10000, got ${JSON.stringify(options.batch)}`);
        if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name))
          throw new UsageError(`a migration's name is 1 to 100 letters, digits, '_', '.' or '-', got ${JSON.stringify(name)}`);
        store = await openStore(options, { readOnly: options.status === true });
        if (options.space !== undefined) await checkWhereHeld(store, options.space, command);
        const migrate = {
          ...(options.module !== undefined && { module: options.module }),
          ...(options.space !== undefined && { space: options.space }),
          ...(batch !== undefined && { batch }),
          json: options.json === true,
          quiet: options.quiet === true,
        };
        return await (options.status ? migrationStatusCommand : migrateCommand)(context(store), name, migrate);
      }
      case 'history': {
        const args = historyArgs(rest, options);
        store = await openStore(options, { readOnly: true });
        await checkWhereHeld(store, args.space, command);
        return await historyCommand(context(store), args);
      }
      case 'restore': {
        const args = restoreArgs(rest, options);
        // A dry run only reads: it runs beside a server holding a SQLite file, as inspect does.
        store = await openStore(options, { readOnly: args.dryRun });
        await checkWhereHeld(store, args.space, command);
        return await restoreCommand(context(store), args);
      }
      case 'revert': {
        const args = revertArgs(rest, options, Date.now());
        store = await openStore(options, { readOnly: args.dryRun });
        await checkWhereHeld(store, args.space, command);
        return await revertCommand(context(store), args);
      }
      case 'erase': {
        const args = eraseArgs(rest, options);
        store = await openStore(options);
        await checkWhereHeld(store, args.space, command);
        return await eraseCommand(context(store), args);
      }
      case 'gc': {
        if (rest.length > 0) throw new UsageError(`gc takes no arguments (got ${rest.join(' ')}); --space SPACE limits it to one space`);
        const retention = {
          clientGroupsMs: retentionDuration(options['client-groups'], '--client-groups', DEFAULT_RETENTION_MS),
          tombstonesMs: retentionDuration(options.tombstones, '--tombstones', DEFAULT_RETENTION_MS),
          changesMs: retentionDuration(options.changes, '--changes', DEFAULT_RETENTION_MS),
        };
        // History is the change log too: gc keeps it for the longer of the two, as a server does.
        const retentionWithHistory = {
          ...retention,
          historyMs:
            options['keep-history'] === undefined ? retention.changesMs : retentionDuration(options['keep-history'], '--keep-history', DEFAULT_RETENTION_MS),
        };
        store = await openStore(options);
        if (options.space !== undefined) await checkWhereHeld(store, options.space, command);
        await gcCommand(context(store, { retention: retentionWithHistory }), options);
        return 0;
      }
      default:
        // HELP lists the commands: one listed there and not handled here is this file's bug.
        throw new Error(`the command ${JSON.stringify(command)} has no handler`);
    }
  } catch (error) {
    if (error instanceof UsageError) return fail(`${error.message}\nRun 'viewsync --help' for usage.`, 2);
    if (
      error instanceof CLIError ||
      error instanceof DumpError ||
      error instanceof RouteError ||
      error instanceof StagingLostError ||
      error instanceof ChangesGoneError
    )
      return fail(error.message, 1);
    if (error instanceof ChangeCursorError) return fail(`--after: ${error.message}\nRun 'viewsync --help' for usage.`, 2);
    // A version the space's history does not keep is the command line's mistake, said in one line.
    if (error instanceof HistoryGoneError) return fail(error.message, 2);
    return fail(`Failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`, 1);
  } finally {
    await store?.close().catch(() => {});
  }
}

/** The command's SPACE: required when `min` is 1, optional when 0; more is an error. */
function operand(command: string, rest: readonly string[], min: 0 | 1): string | undefined {
  if (rest.length > 1) throw new UsageError(`${command} takes one SPACE, got ${rest.length} arguments`);
  if (rest.length < min) throw new UsageError(`${command} needs a SPACE (quote the default space as '')`);
  return rest[0];
}

function parse(argv: readonly string[]) {
  const options = Object.fromEntries(
    Object.entries(OPTIONS).map(([name, { type, ...rest }]) => [
      name,
      { type, ...('short' in rest && { short: rest.short }), ...('multiple' in rest && { multiple: rest.multiple }) },
    ]),
  );
  const config = { args: [...argv], options, allowPositionals: true, strict: true, tokens: true } as const;
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    // Node's message for an unknown option says how to pass a positional starting with '-', not what was meant.
    const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec((error as Error).message);
    if ((error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
      const guess = didYouMean(unknown[2]!, Object.keys(OPTIONS), (name) => `--${name}`);
      throw new UsageError(
        `Unknown option '${unknown[1]}${unknown[2]}'${guess || ` (a SPACE that starts with '-' goes after '--': viewsync inspect -- ${unknown[1]}${unknown[2]})`}`,
      );
    }
    throw new UsageError((error as Error).message);
  }
  // parseArgs keeps the last of an option given twice: `--to 5 … --to 50` would act on 50 unsaid.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || token.value === undefined || 'multiple' in OPTIONS[token.name as keyof typeof OPTIONS]) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given twice: give it once`);
    seen.add(token.name);
  }
  return parsed as { values: Options & { help?: boolean }; positionals: string[] };
}

/**
 * With several stores: refuses a space whose data is not where these options find it (a
 * placement the CLI was not told, src/route/survey.ts), before the command reads an empty copy
 * or writes a second one.
 */
async function checkWhereHeld(store: OpenStore, space: string, command: string): Promise<void> {
  const router = routerOf(store.storage);
  if (router) await locateWhereHeld(router, space, command);
}

/**
 * Refuses a SPACE the store holds nothing of (no version, no unfinished import): read as it is,
 * it would answer empty and exit 0, as if a mistyped name were a space with no data. Followed,
 * it may be one not written yet, so `--follow` only says so and waits for its first change.
 */
async function checkExists(store: OpenStore, space: string, { follow }: { follow: boolean }): Promise<void> {
  const meta = await store.storage.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true, space });
  if (meta !== undefined) return;
  // Only a space with no version left: the listing reads every space's record once.
  const spaces = await allSpaces(store.storage);
  if (spaces.includes(space)) return;
  const near = nearestName(space, spaces);
  const guess = near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`;
  if (follow) return void process.stderr.write(`viewsync: space ${JSON.stringify(space)} does not exist yet${guess}; following it from its first change\n`);
  throw new CLIError(
    `space ${JSON.stringify(space)} does not exist: ${store.label} holds nothing of it${guess}. 'viewsync inspect' lists the spaces (quote the default space as '')`,
  );
}

function context(store: OpenStore, options: Partial<SyncOptions> = {}): SyncContext {
  return createContext({ storage: store.storage, mutators: {}, pokes: false, onError: () => {}, ...options });
}

async function inspectCommand(ctx: SyncContext, space: string | undefined, options: Options): Promise<void> {
  if (space !== undefined) {
    const detail = await inspect(ctx, space);
    if (options.json) return print(JSON.stringify(detail, null, 2));
    const { groups, rejectedMutations, migrations: _, ...summary } = detail;
    print(summaryTable([summary]));
    printStaging([summary]);
    printWebhooks(summary.webhooks);
    if (detail.migrations) printMigrations(detail.migrations);
    printRejected(rejectedMutations, table);
    print('');
    if (groups.length === 0) return print('No client groups.');
    print(
      table(
        groups.map((group) => [
          group.userID ?? '(anonymous)',
          group.clientGroupID,
          group.expired ? 'expired' : date(group.lastActive),
          group.schemaVersion === null ? '-' : JSON.stringify(group.schemaVersion),
          Object.entries(group.clients)
            .map(([client, lmid]) => `${client}=${lmid}`)
            .join(' '),
        ]),
        ['USER', 'CLIENT GROUP', 'LAST ACTIVE', 'SCHEMA', 'CLIENTS (lastMutationID)'],
      ),
    );
    return;
  }
  const { spaces } = await inspect(ctx);
  if (options.json) return print(JSON.stringify({ spaces }, null, 2));
  if (spaces.length === 0) return print('No spaces: the store holds no data.');
  print(summaryTable(spaces));
  printStaging(spaces);
}

/** The staging areas of unfinished imports, if any: an operator sees what a killed import left. */
function printStaging(spaces: SpaceSummary[]): void {
  const rows = spaces.flatMap(({ space, staging }) => staging.map((area) => [JSON.stringify(space), date(area.started), count(area.rows), size(area.bytes)]));
  if (rows.length === 0) return;
  print('');
  print('Unfinished imports: running, or killed (gc removes one a day after it began):');
  print(table(rows, ['SPACE', 'STARTED', 'STAGED ENTRIES', 'SIZE']));
}

/** A space's webhooks, if any delivered there: where each got to, and why one is disabled. */
function printWebhooks(webhooks: SpaceSummary['webhooks']): void {
  if (webhooks === undefined) return;
  const state = (hook: WebhookSummary) =>
    hook.disabled
      ? `disabled ${date(hook.disabled.at)}: ${hook.disabled.reason}`
      : hook.pending?.error !== undefined
        ? `retrying (${hook.pending.attempts} attempts): ${hook.pending.error}`
        : 'delivering';
  print('');
  print(
    table(
      Object.entries(webhooks).map(([name, hook]) => [name, hook.cursor, String(hook.lagVersions), count(hook.delivered), count(hook.failures), state(hook)]),
      ['WEBHOOK', 'CURSOR', 'VERSIONS BEHIND', 'DELIVERED', 'FAILED', 'STATE'],
    ),
  );
}

/** The spaces' table; a QUOTA column (the share of each bound used) when a quota was given. */
function summaryTable(spaces: SpaceSummary[]): string {
  const quotas = spaces.some((summary) => summary.quota !== undefined);
  const stores = spaces.some((summary) => summary.store !== undefined);
  const logs = spaces.some((summary) => summary.changes !== undefined);
  const schemas = spaces.some(
    (summary) => summary.schemaVersions !== undefined && Object.keys(summary.schemaVersions).some((version) => version !== '' && version !== '?'),
  );
  const rows = spaces.map((summary) => [
    JSON.stringify(summary.space),
    ...(stores ? [summary.store ?? ''] : []),
    count(summary.entries),
    size(summary.bytes),
    ...(quotas ? [quotaCell(summary, size)] : []),
    String(summary.version),
    String(summary.clientGroups),
    date(summary.lastActivity),
    ...(logs ? [summary.changes === undefined ? '-' : `${count(summary.changes.rows)} since ${summary.changes.from ?? 'broken'}`] : []),
    ...(schemas ? [schemaCell(summary)] : []),
  ]);
  return table(rows, [
    'SPACE',
    ...(stores ? ['STORE'] : []),
    'ENTRIES',
    'SIZE',
    ...(quotas ? ['QUOTA'] : []),
    'VERSION',
    'CLIENT GROUPS',
    'LAST ACTIVITY',
    ...(logs ? ['CHANGE LOG'] : []),
    ...(schemas ? ['GROUPS BY SCHEMA (7 days)'] : []),
  ]);
}

/** Moves the space, telling each phase on stderr as it starts: a log shows where a killed move stopped. */
async function moveCommand(ctx: SyncContext, space: string, to: string, switchTimeoutMs: number, options: Options): Promise<void> {
  let phase = '';
  const result = await moveSpace(ctx, space, to, {
    switchTimeoutMs,
    onProgress: (now) => {
      if (now.phase === phase) return;
      phase = now.phase;
      if (!options.quiet) process.stderr.write(`move: ${phase} (${plural(now.rows, 'row')} so far)\n`);
    },
  });
  if (!result.moved) return print(`${JSON.stringify(space)} is in ${JSON.stringify(to)} already; nothing to move`);
  print(
    `moved ${JSON.stringify(space)} from ${JSON.stringify(result.from)} to ${JSON.stringify(result.to)}: ${plural(result.rows, 'row')} copied in ${formatDuration(Math.round(result.totalMs))}; its writes waited ${Math.round(result.switchMs)} ms for the switch`,
  );
}

/** Checks or repairs the directory; resolves to the exit code: 1 while a space's row does not lead to its copy in use. */
async function directoryCommand(storage: Router, action: 'check' | 'repair', options: Options): Promise<number> {
  const listed = (value: unknown) => (value === undefined ? '-' : typeof value === 'string' ? value : JSON.stringify(value));
  if (action === 'check') {
    const problems = await checkDirectory(storage);
    if (options.json) print(JSON.stringify({ problems }, null, 2));
    else if (problems.length === 0) print('Every space the stores hold is listed in the directory, in the store holding its copy in use.');
    else
      print(
        table(
          problems.map((problem) => [JSON.stringify(problem.space), listed(problem.listed), problem.inUse ?? '-', problem.reason]),
          ['SPACE', 'LISTED IN', 'IN USE IN', 'PROBLEM'],
        ),
      );
    if (problems.length === 0) return 0;
    const n = problems.length;
    return fail(
      `${n === 1 ? "1 space's directory row does not lead to its copy in use" : `${count(n)} spaces' directory rows do not lead to their copies in use`}: 'viewsync directory repair' with the same options repairs what it can`,
      1,
    );
  }
  const { repaired, left } = await repairDirectory(storage);
  if (options.json) print(JSON.stringify({ repaired, left }, null, 2));
  else if (repaired.length === 0 && left.length === 0) print('Nothing to repair: every space the stores hold is listed in the store holding its copy in use.');
  else {
    const q = JSON.stringify;
    for (const { space, listed: was, inUse } of repaired)
      print(
        was === undefined
          ? `listed ${q(space)} in ${q(inUse)}, which holds its copy in use (it had no row)`
          : `repaired ${q(space)}: listed in ${q(inUse)}, not ${q(was)}`,
      );
  }
  for (const { space, reason } of left) process.stderr.write(`viewsync: left ${JSON.stringify(space)} as it was: it ${reason}\n`);
  return left.length === 0 ? 0 : fail(`${plural(left.length, 'space')} left as ${left.length === 1 ? 'it was' : 'they were'}: see above`, 1);
}

/** How long an export waits for stdout to take more, unless `--idle-timeout` says otherwise. */
const IDLE_TIMEOUT_MS = 30_000;

/** Writes the dump to stdout; `idle`: milliseconds the export waits for stdout to take more. */
async function exportCommand(ctx: SyncContext, space: string, idle: number, options: Options): Promise<void> {
  const started = performance.now();
  let done = { entries: 0, groups: 0 };
  const entries = () => done.entries;
  const progress = reporter(
    options.quiet,
    () => `export: ${count(done.entries)} entries${done.groups > 0 ? ` and ${plural(done.groups, 'client group')}` : ''} of ${JSON.stringify(space)}…`,
  );
  const out = process.stdout;
  try {
    const reader = exportSpace(ctx, space, { idleMs: idle, history: options.history === true, onProgress: (now) => (done = now) }).getReader();
    try {
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        const chunk = next.value;
        progress.tick();
        if (!out.write(chunk)) await drained(out);
      }
    } catch (error) {
      // stdout failed (a closed pipe): end the snapshot now, not when the export's idle timer fires.
      await reader.cancel().catch(() => {});
      const why =
        error instanceof ReaderIdleError
          ? `stdout took nothing for ${formatDuration(idle)} (--idle-timeout), and an export does not hold its snapshot longer`
          : (error as Error).message;
      // Said plainly: the file or pipe holds a dump that looks fine up to where it stops.
      throw new CLIError(
        `export of ${JSON.stringify(space)} failed after ${plural(entries(), 'entry')}: ${why}. What was written lacks the dump's end line: it is not a whole dump, and an import refuses it`,
      );
    }
  } finally {
    progress.stop();
  }
  await new Promise<void>((resolve, reject) => out.write('', (error) => (error ? reject(error) : resolve())));
  if (!options.quiet)
    process.stderr.write(
      `exported ${plural(done.entries, 'entry')} and ${plural(done.groups, 'client group')} of ${JSON.stringify(space)} in ${elapsed(started)}\n`,
    );
}

async function importCommand(ctx: SyncContext, space: string, options: Options): Promise<void> {
  const started = performance.now();
  let last = { phase: 'reading', entries: 0, applied: 0 };
  const progress = reporter(options.quiet, () =>
    last.phase === 'reading'
      ? `import: ${count(last.entries)} entries read and checked…`
      : `import: ${count(last.applied)} changes of ${count(last.entries)} entries applied…`,
  );
  try {
    const result = await importSpace(ctx, space, process.stdin, {
      mode: options.merge ? 'merge' : 'replace',
      ...(options.from !== undefined && { from: options.from }),
      allowFormat1: options['allow-format-1'] === true,
      clients: options['skip-clients'] !== true,
      history: options.history === true,
      onProgress: (now) => {
        last = now;
        progress.tick();
      },
    });
    if (!options.quiet) {
      const clients = options['skip-clients'] ? 'skipped (--skip-clients)' : `${plural(result.clients, 'client record')} written`;
      process.stderr.write(
        `imported ${plural(result.entries, 'entry')} into ${JSON.stringify(space)} in ${elapsed(started)}: ${count(result.written)} written, ${count(result.deleted)} deleted, the rest unchanged; ${plural(result.groups, 'client group')}: ${clients}\n`,
      );
    }
    // Even with --quiet: a client left out is one that will not go on where it was.
    for (const { userID, clientGroupID, clientID, reason } of result.skipped) {
      process.stderr.write(
        `viewsync: client ${JSON.stringify(clientID)} of group ${JSON.stringify(clientGroupID)}${userID === null ? '' : ` (user ${JSON.stringify(userID)})`} not imported: ${reason}\n`,
      );
    }
  } finally {
    progress.stop();
  }
}

/**
 * Writes `space`'s changes after `after` to stdout, one JSON line each (its `cursor` is where to
 * go on from); with `follow`, goes on writing them as they come until SIGINT or SIGTERM, reading
 * again every `pollMs` when there was nothing (the CLI hears no pokes). Without a space, every
 * space's, each page followed by a line `{"viewsync":"cursor","cursor":…}`: the store cursor to
 * go on from.
 */
async function changesCommand(ctx: SyncContext, space: string | undefined, after: string | undefined, follow: boolean, pollMs: number): Promise<void> {
  const out = process.stdout;
  const stop = new AbortController();
  const end = () => stop.abort();
  process.once('SIGINT', end).once('SIGTERM', end);
  // A closed pipe (`| head`) ends it, as it would any other writer.
  out.once('error', end);
  try {
    const pages =
      space === undefined
        ? allThrough(ctx, after, follow, pollMs, stop.signal)
        : follow
          ? followChanges(ctx, space, { after: after ?? '0', signal: stop.signal, pollMs })
          : onceThrough(ctx, space, after ?? '0');
    for await (const page of pages) {
      let text = page.changes.map((change) => JSON.stringify(change) + '\n').join('');
      if (space === undefined) text += JSON.stringify({ viewsync: 'cursor', cursor: page.cursor }) + '\n';
      if (!out.write(text)) await drained(out);
      if (stop.signal.aborted) break;
    }
  } finally {
    process.off('SIGINT', end).off('SIGTERM', end);
    out.off('error', end);
  }
}

/** The pages of `space`'s feed after `after`, up to its end now. */
async function* onceThrough(ctx: SyncContext, space: string, after: string): AsyncGenerator<FeedPage> {
  for (let more = true; more; ) {
    const page = await readChanges(ctx, space, { after });
    yield page;
    after = page.cursor;
    more = page.more;
  }
}

/** The pages of every space's feed after the store cursor `after`: up to their end now, or for ever with `follow`. */
async function* allThrough(
  ctx: SyncContext,
  after: string | undefined,
  follow: boolean,
  pollMs: number,
  signal: AbortSignal,
): AsyncGenerator<{ changes: readonly unknown[]; cursor: string }> {
  while (!signal.aborted) {
    const page = await readAllChanges(ctx, { ...(after !== undefined && { after }) });
    after = page.cursor;
    if (page.changes.length > 0 || !follow) yield page;
    if (page.more) continue;
    if (!follow) return;
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, pollMs);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)), { once: true });
    });
  }
}

async function gcCommand(ctx: SyncContext, options: Options): Promise<void> {
  const removed = await collectGarbage(ctx, options.space);
  if (options.json) return print(JSON.stringify(removed));
  print(
    `Removed ${plural(removed.clientGroups, 'client group')} (${plural(removed.clients, 'client')}), ${plural(removed.tombstones, 'tombstone')}, ${plural(removed.views, 'view record')}, ${plural(removed.changes, 'change log row')}.`,
  );
}

/**
 * A progress line on stderr, at most once a `VIEWSYNC_PROGRESS_MS` (default 1,000 ms), and only
 * after the first such interval: a short run prints none.
 */
function reporter(quiet: boolean | undefined, line: () => string) {
  const every = Number(process.env.VIEWSYNC_PROGRESS_MS ?? 1_000);
  let next = performance.now() + every;
  const tty = process.stderr.isTTY === true;
  let shown = false;
  return {
    tick() {
      if (quiet || performance.now() < next) return;
      next = performance.now() + every;
      shown = true;
      // On a terminal the line is rewritten in place; in a log, each is a line of its own.
      process.stderr.write(tty ? `\r${line()}\x1b[K` : `${line()}\n`);
    },
    stop() {
      if (shown && tty) process.stderr.write('\r\x1b[K');
    },
  };
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function plural(n: number, noun: string): string {
  return `${count(n)} ${n === 1 ? noun : noun.endsWith('y') ? `${noun.slice(0, -1)}ies` : `${noun}s`}`;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  for (; value >= 1024 && unit < units.length - 1; unit++) value /= 1024;
  return `${value.toFixed(1)} ${units[unit]}`;
}

function elapsed(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(1)} s`;
}

function quoteArg(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/** `: did you mean X?` for the known name nearest `typed`, or nothing when none is near. */
function didYouMean(typed: string, known: Iterable<string>, show: (name: string) => string = (name) => name): string {
  const guess = nearestName(typed, known);
  return guess === undefined ? '' : `: did you mean ${show(guess)}?`;
}

function fail(message: string, code: number): number {
  process.stderr.write(`viewsync: ${message}\n`);
  return code;
}
