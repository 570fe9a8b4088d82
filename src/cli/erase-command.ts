import type { SyncContext } from '../context/context.js';
import { eraseData, ERASED_TOPIC } from '../backend/history.js';
import type { EraseArgs } from './history-args.js';
import { requireSpace } from './history-command.js';
import { keys } from './history-output.js';
import { print, printable } from './output.js';

/**
 * `viewsync erase SPACE (--key K | --prefix P | --user U)`: erases the target's values from the
 * live data, the history and the feed (see eraseData), and says what it took out. It has no dry
 * run: what a key or a prefix holds is `viewsync history`'s to show, and an erasure is meant to
 * leave nothing to show afterwards.
 */
export async function eraseCommand(ctx: SyncContext, args: EraseArgs): Promise<number> {
  await requireSpace(ctx, args.space);
  const result = await eraseData(ctx, args.space, args.target);
  if (args.json) return (print(JSON.stringify({ space: args.space, target: args.target, ...result }, null, 2)), 0);
  const { target } = args;
  const what =
    'key' in target
      ? `key ${JSON.stringify(target.key)}`
      : 'prefix' in target
        ? `the keys under ${JSON.stringify(target.prefix)}`
        : `what user ${JSON.stringify(target.userID)} wrote`;
  const count = (n: number, noun: string) => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;
  print(
    `Erased ${printable(what)} from ${JSON.stringify(args.space)}: ${keys(result.deleted.length)} deleted, ${count(result.historyRows, 'change')} of its history without their values, ${count(result.checkpointRows, 'checkpoint row')} removed, ${count(result.rejected, 'rejected mutation')} without their args${result.version === undefined ? '' : `, as version ${result.version}`}.`,
  );
  print(
    `Where the space keeps a change log, the feed carries a ${ERASED_TOPIC} event naming it, so that webhook receivers erase their copies; their copies until then, and backups of the store, are not reached.`,
  );
  const listed = result.deleted.slice(0, 20);
  if (listed.length > 0)
    print(
      `Deleted: ${listed.map((key) => printable(JSON.stringify(key))).join(', ')}${result.deleted.length > listed.length ? `, … and ${(result.deleted.length - listed.length).toLocaleString('en-US')} more (--json lists every one)` : ''}`,
    );
  return 0;
}
