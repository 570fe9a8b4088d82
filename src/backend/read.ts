import type { SyncContext } from '../context/context.js';
import { globalVersion } from '../sync/session/global-version.js';
import { SpaceReadTransaction } from '../sync/transactions/read-transaction.js';
import type { ReadTransaction } from '../sync/transactions/transaction.js';
import { checkSpace, deadline } from './transact.js';
import { checkContext } from '../context/state.js';

/** Options for {@link read}. */
export interface ReadOptions {
  /**
   * How long `fn` may hold the snapshot, in milliseconds. Past it, the call rejects with a
   * `MutatorTimeoutError`, the snapshot is let go and `tx` is closed. Default: `limits.appCodeMs`.
   */
  timeoutMs?: number | undefined;
}

/**
 * Runs `fn` on one consistent, read-only snapshot of `space`'s entries (`get`, `has`, `isEmpty`,
 * `scan`, as a client's `ReadTransaction`), for a REST API, an e-mail digest or a server-rendered
 * page: it never sees half of a push. Resolves with what `fn` returned; `tx` is closed then.
 *
 * On PostgreSQL the snapshot holds no lock. On the SQLite, memory and Durable Object stores it
 * holds back the space's commits until `fn` returns (pushes wait, none fail), at most
 * `timeoutMs`: read, then do slow work (rendering, sending) after it resolves.
 *
 * @example
 * const todos = await read(ctx, 'acme', (tx) => tx.scan({ prefix: 'todo/' }).toArray());
 */
export async function read<T>(ctx: SyncContext, space: string, fn: (tx: ReadTransaction) => T | Promise<T>, options: ReadOptions = {}): Promise<T> {
  checkContext(ctx);
  checkSpace(space);
  const limits = ctx.limits;
  const timed = deadline('read', options.timeoutMs ?? limits.appCodeMs, 'its snapshot was let go');
  try {
    return await ctx.storage.transaction(
      async (storageTx) => {
        const tx = new SpaceReadTransaction(globalVersion.reader(storageTx, space, { indexes: ctx.indexes }), limits);
        try {
          return await timed.run(() => fn(tx));
        } finally {
          tx.close();
        }
      },
      { readOnly: true, space },
    );
  } finally {
    timed.stop();
  }
}
