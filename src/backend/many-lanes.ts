import type { SyncContext } from '../context/context.js';
import type { StorageTransaction } from '../storage/types.js';

/**
 * A webhook's work in many spaces in one transaction: where the store runs one over several
 * spaces' deliveries lanes (`Storage.manySpaces`), the claims (or records) of a hundred spaces
 * cost one BEGIN, one set of locks and one COMMIT, not a hundred, and the store's connections
 * stay with the pushes.
 */

/**
 * Runs `each` for every one of `spaces` in one transaction of their deliveries lanes, side by
 * side (a database pipelines their reads), and resolves with each one's result. Resolves
 * undefined when the store cannot run one (a routed storage), or when that transaction failed,
 * reported to nobody: the caller then goes a space at a time, so that one space's failure (a
 * record the store refuses) is that space's alone, and is reported there.
 */
export async function inManyLanes<T>(ctx: SyncContext, spaces: readonly string[], each: (tx: StorageTransaction, space: string) => Promise<T>): Promise<Map<string, T> | undefined> {
  if (!ctx.storage.manySpaces || spaces.length < 2) return undefined;
  try {
    return await ctx.storage.transaction(async (tx) => {
      const results = await Promise.all(spaces.map((space) => each(tx, space)));
      return new Map(spaces.map((space, i) => [space, results[i]!]));
    }, { readOnly: false, lane: 'deliveries', spaces });
  } catch {
    return undefined;
  }
}
