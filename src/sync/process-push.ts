import type { Mutation, PushRequest } from '../protocol/push-request.js';
import { HTTPError, TemporaryError } from '../server/errors.js';
import type { Storage, StorageTransaction } from '../storage/types.js';
import type { Mutators } from './mutator.js';
import { assertOwner } from './owner.js';
import type { ClientRecord, Strategy } from './strategy.js';
import { MutationTransaction } from './write-transaction.js';

/** What a push did, beyond committing. */
export interface PushOutcome {
  /** True when the push proved the server lost the client's state; nothing was committed. */
  clientStateNotFound: boolean;
  /**
   * Mutations whose mutator threw: permanent errors (skipped, lastMutationID advanced) and the
   * temporary error that stopped the push, if one did.
   */
  failures: Array<{ mutation: Mutation; error: unknown }>;
  /** The temporary error that stopped the push, if one did. */
  stoppedBy: TemporaryError | undefined;
}

/**
 * Runs a push's mutations in order (spec, push rules 2-7): in one storage transaction, or with
 * `perMutation` in one each, so a long push never holds the store's write lock for its whole
 * length (rule 5 allows both). Throws an `HTTPError` when the group or a client is not the
 * caller's; in one transaction that commits nothing, per mutation it keeps those before it.
 */
export async function processPush(
  storage: Storage,
  strategy: Strategy,
  mutators: Mutators,
  push: PushRequest,
  space: string,
  userID: string | undefined,
  perMutation = false,
): Promise<PushOutcome> {
  const all = push.mutations.map((mutation, index) => ({ mutation, index }));
  const batches = perMutation && all.length > 0 ? all.map((one) => [one]) : [all];
  const outcome: PushOutcome = { clientStateNotFound: false, failures: [], stoppedBy: undefined };
  try {
    for (const batch of batches) {
      const done = await storage.transaction((tx) => run(tx, batch), { readOnly: false });
      outcome.failures.push(...done.failures);
      outcome.stoppedBy = done.stoppedBy;
      if (done.stoppedBy) break;
    }
  } catch (error) {
    if (error === LOST) return { ...outcome, clientStateNotFound: true };
    throw error;
  }
  return outcome;

  async function run(tx: StorageTransaction, batch: Array<{ mutation: Mutation; index: number }>): Promise<PushOutcome> {
    const session = await strategy(tx, space);
    const group = push.clientGroupID;
    if (!(await assertOwner(session, group, userID))) await session.putGroup(group, { owner: userID ?? null });

    const outcome: PushOutcome = { clientStateNotFound: false, failures: [], stoppedBy: undefined };
    const clients = new Map<string, ClientRecord & { dirty: boolean }>();
    for (const { mutation, index } of batch) {
      let client = clients.get(mutation.clientID);
      if (client === undefined) {
        const stored = await session.getClient(mutation.clientID);
        if (stored !== undefined && stored.clientGroupID !== group) {
          throw new HTTPError(400, `mutations.${index}: client ${mutation.clientID} belongs to another client group`);
        }
        // A client's ids start at 1 and it re-sends from its last acknowledged one, so an
        // unknown client past 1 had mutations processed here that this store no longer knows
        // (a wiped or restored database). Ignoring them would block it forever; this tells it
        // to start over, as a lost cookie does on pull. Nothing of this transaction is committed.
        if (stored === undefined && mutation.id > 1) throw LOST;
        // A new client's record starts at 0 and is tied to this group (spec, push state table).
        client = { clientGroupID: group, lastMutationID: stored?.lastMutationID ?? 0, dirty: stored === undefined };
        clients.set(mutation.clientID, client);
      }
      // Already processed (the client re-sends everything pending) or out of order: skip.
      if (mutation.id !== client.lastMutationID + 1) continue;

      const mtx = new MutationTransaction(session, mutation.clientID, mutation.id, userID);
      try {
        const mutator = Object.hasOwn(mutators, mutation.name) ? mutators[mutation.name] : undefined;
        if (mutator === undefined) throw new UnknownMutatorError(mutation.name);
        await mutator(mtx, mutation.args);
        await mtx.flush();
      } catch (error) {
        mtx.discard();
        outcome.failures.push({ mutation, error });
        if (error instanceof TemporaryError) {
          outcome.stoppedBy = error;
          break;
        }
        // Permanent (spec, push rule 6): none of its writes, but it counts as processed.
      }
      client.lastMutationID = mutation.id;
      client.dirty = true;
    }

    for (const [clientID, { dirty, ...record }] of clients) {
      if (dirty) await session.putClient(clientID, record);
    }
    await session.commit();
    return outcome;
  }
}

/** Thrown inside the push transaction to roll it back when the client's state is lost. */
const LOST = Symbol('client state lost');

/** A push named a mutator the server does not have. */
export class UnknownMutatorError extends Error {
  override name = 'UnknownMutatorError';
  constructor(name: string) {
    super(`No mutator is named ${JSON.stringify(name)}`);
  }
}
