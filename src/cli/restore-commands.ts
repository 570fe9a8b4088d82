import type { SyncContext } from '../context/context.js';
import { restoreSpace, revertChanges, type RevertConflict } from '../backend/history.js';
import type { RestoreArgs, RevertArgs } from './history-args.js';
import { requireSpace } from './history-command.js';
import { causeText, keys, originLine, plannedCount, printPlanned, shown } from './history-output.js';
import { print, printable, table } from './output.js';

/**
 * `viewsync restore` and `viewsync revert`: forward operations on a space's history, each one
 * commit that clients pull as an ordinary patch (see backend/history.ts). Each prints what it
 * changed, or with `--dry-run` would change, and the version it made.
 */

/** The exit code of a revert stopped by conflicts (`--on-conflict stop`, the default): nothing was changed. */
export const STOPPED_ON_CONFLICTS = 3;

/** `viewsync restore SPACE --to VERSION [--prefix P] [--dry-run]`; exit 0. */
export async function restoreCommand(ctx: SyncContext, args: RestoreArgs): Promise<number> {
  await requireSpace(ctx, args.space);
  const result = await restoreSpace(ctx, args.space, { to: args.to, prefix: args.prefix, dryRun: args.dryRun });
  if (args.json) return (print(JSON.stringify({ space: args.space, ...result }, null, 2)), 0);
  const what = `${JSON.stringify(args.space)}${args.prefix === '' ? '' : ` under ${JSON.stringify(args.prefix)}`}`;
  const { changes } = result;
  if (changes.length === 0) print(`${what} is as it was at version ${args.to}: nothing to change.`);
  else if (args.dryRun) print(`Dry run: restoring ${what} to version ${args.to} would change ${plannedCount(changes)}; nothing was written.`);
  else print(`Restored ${what} to version ${args.to}: changed ${plannedCount(changes)}, as version ${result.version}.`);
  printPlanned(changes);
  return 0;
}

/** `viewsync revert SPACE <cause> [--on-conflict P] [--dry-run]`; exit {@link STOPPED_ON_CONFLICTS} when stopped, else 0. */
export async function revertCommand(ctx: SyncContext, args: RevertArgs): Promise<number> {
  await requireSpace(ctx, args.space);
  const result = await revertChanges(ctx, args.space, args.cause, { onConflict: args.onConflict, dryRun: args.dryRun });
  const code = result.stopped ? STOPPED_ON_CONFLICTS : 0;
  if (args.json) print(JSON.stringify({ space: args.space, cause: args.cause, onConflict: args.onConflict, ...result }, null, 2));
  else {
    const what = `what ${causeText(args.cause)} did in ${JSON.stringify(args.space)}`;
    const { changes, conflicts } = result;
    const met =
      conflicts.length === 0
        ? ''
        : `; ${conflicts.length === 1 ? '1 conflict' : `${conflicts.length} conflicts`} ${args.onConflict === 'skip' ? 'left as is' : 'written back all the same'} (--on-conflict ${args.onConflict}), listed below`;
    if (result.stopped)
      print(
        `${args.dryRun ? 'Dry run: reverting' : 'Reverting'} ${what} ${args.dryRun ? 'would stop' : 'stopped'} on ${conflicts.length === 1 ? '1 conflict' : `${conflicts.length} conflicts`}, listed below: nothing was ${args.dryRun ? 'written' : 'changed'}.`,
      );
    else if (changes.length === 0) print(`Nothing to revert of ${what}: every key it changed is as it was before${met}.`);
    else if (args.dryRun) print(`Dry run: reverting ${what} would change ${plannedCount(changes)}${met}; nothing was written.`);
    else print(`Reverted ${what}: changed ${plannedCount(changes)}, as version ${result.version}${met}.`);
    printPlanned(changes);
    printConflicts(conflicts);
  }
  if (result.stopped) {
    process.stderr.write(
      `viewsync: the revert stopped on ${conflicts(result.conflicts.length)}: keys a later change of another cause wrote. --on-conflict skip leaves those keys as they are and reverts the rest; overwrite writes them back all the same\n`,
    );
  }
  return code;
}

/** Every conflict: a later change of another cause wrote the key. Never cut short: each is a decision for the operator. */
function printConflicts(list: readonly RevertConflict[]): void {
  if (list.length === 0) return;
  print('');
  print(`Conflicts: ${keys(list.length)} that a later change of another cause wrote:`);
  const rows = list.map((conflict) => [
    printable(conflict.key),
    String(conflict.version),
    conflict.erased ? '(erased)' : conflict.revertTo === undefined ? '(deleted)' : shown(conflict.revertTo),
    shown(conflict.current),
    conflict.later.map(({ version, by }) => `v${version} ${originLine(by)}`).join('; ') || '(the value to go back to was erased)',
  ]);
  print(table(rows, ['KEY', 'FIRST CHANGED', 'REVERTS TO', 'NOW', 'LATER CHANGES']));
}

function conflicts(n: number): string {
  return n === 1 ? '1 conflict' : `${n.toLocaleString('en-US')} conflicts`;
}
