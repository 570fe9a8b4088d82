import type { SyncContext } from '../context/context.js';
import { at, readHistory, type HistoryPage } from '../backend/history.js';
import type { LoggedChange } from '../sync/history/log-reads.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { HistoryArgs } from './history-args.js';
import { originCells, shown } from './history-output.js';
import { date, print, printable, table } from './output.js';
import { CLIError } from './store.js';

/**
 * `viewsync history SPACE [KEY]`: every change of a key, of a prefix or of the space, oldest
 * first, with its version, time, values and what made it; with `--at VERSION`, the space's
 * entries as they were then. Reads only.
 */
export async function historyCommand(ctx: SyncContext, args: HistoryArgs): Promise<number> {
  await requireSpace(ctx, args.space);
  if (args.at !== undefined) {
    const page = await at(ctx, args.space, args.at, {
      ...(args.prefix !== undefined && { prefix: args.prefix }),
      ...(args.after !== undefined && { after: args.after }),
      ...(args.limit !== undefined && { limit: args.limit }),
    });
    if (args.json) return (print(JSON.stringify({ space: args.space, ...page }, null, 2)), 0);
    const under = args.prefix ? ` under ${JSON.stringify(args.prefix)}` : '';
    if (page.entries.length === 0) print(`${JSON.stringify(args.space)} held no entries${under} at version ${args.at}.`);
    else
      print(
        table(
          page.entries.map(([key, value]) => [printable(key), shown(value)]),
          ['KEY', `VALUE AT VERSION ${args.at}`],
        ),
      );
    if (page.more) process.stderr.write(`viewsync: more entries follow: go on with --after ${quoted(page.next!)}\n`);
    return 0;
  }
  const page = await changesOf(ctx, args);
  if (args.json) return (print(JSON.stringify({ space: args.space, ...page }, null, 2)), 0);
  const what = args.key !== undefined ? `key ${JSON.stringify(args.key)}` : args.prefix ? `keys under ${JSON.stringify(args.prefix)}` : 'keys';
  const kept = `its history keeps versions ${page.kept.from} to ${page.kept.to}`;
  if (page.changes.length === 0)
    print(`No changes of ${printable(what)} in ${JSON.stringify(args.space)}${args.after === undefined ? '' : ` after version ${args.after}`}: ${kept}.`);
  else print(table(page.changes.map(changeRow), ['VERSION', 'AT', 'OP', 'KEY', 'BY', 'USER', 'CLIENT GROUP', 'MUTATOR', 'BEFORE → AFTER']));
  if (page.more) process.stderr.write(`viewsync: more changes follow: go on with --after ${page.version}\n`);
  return 0;
}

/**
 * A space the store holds no data of is refused (exit 1): a misspelt name would otherwise read
 * as an empty history, and a write would make the space.
 */
export async function requireSpace(ctx: SyncContext, space: string): Promise<void> {
  const meta = await ctx.storage.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true, space });
  if (meta === undefined)
    throw new CLIError(`Space ${JSON.stringify(space)} holds no data in this store: check its name ('viewsync inspect' lists the spaces)`);
}

/** The changes asked for: one page of `limit`, or, without it, every page up to now. */
async function changesOf(ctx: SyncContext, args: Extract<HistoryArgs, { at?: undefined }>): Promise<HistoryPage> {
  const filter = { ...(args.key !== undefined && { key: args.key }), ...(args.prefix !== undefined && { prefix: args.prefix }) };
  if (args.limit !== undefined) return readHistory(ctx, args.space, { ...filter, limit: args.limit, ...(args.after !== undefined && { after: args.after }) });
  const changes: LoggedChange[] = [];
  let after = args.after;
  for (;;) {
    const page = await readHistory(ctx, args.space, { ...filter, limit: 10_000, ...(after !== undefined && { after }) });
    changes.push(...page.changes);
    if (!page.more) return { ...page, changes };
    after = page.version;
  }
}

function changeRow(change: LoggedChange): string[] {
  const erasedBefore = change.erased === 'before' || change.erased === 'both';
  const erasedAfter = change.erased === 'after' || change.erased === 'both';
  // An erased value leaves no trace of itself, but an erasure only empties values that were there.
  const op = change.after !== undefined || erasedAfter ? 'set' : 'del';
  const before = erasedBefore ? '(erased)' : shown(change.before);
  const after = erasedAfter ? '(erased)' : op === 'del' ? '(deleted)' : shown(change.after);
  return [String(change.version), date(change.at), op, printable(change.key), ...originCells(change.by), `${before} → ${after}`];
}

/** A key as a shell argument; control characters escaped, as the tables do. */
function quoted(text: string): string {
  if (/^[\w./-]+$/.test(text)) return text;
  return `'${text.replaceAll("'", "'\\''").replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}'`;
}
