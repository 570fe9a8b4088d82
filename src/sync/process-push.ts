import type { Mutation, PushRequest } from '../protocol/push-request.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import type { Storage, StorageTransaction } from '../storage/types.js';
import type { Limits } from './transactions/limits.js';
import type { Mutators } from './transactions/mutator.js';
import { mutatorNamed, Watchdog } from './transactions/app-code.js';
import type { SpaceQuota } from './transactions/quota.js';
import type { ClientRecord, SessionClock, Strategy } from './version/strategy.js';
import { type BatchInfo, runBatched } from './batching/group-commit.js';
import { MutationTransaction } from './transactions/write-transaction.js';

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
  /** True when the push committed a change (data or a lastMutationID), so the space's clients should pull. */
  changed: boolean;
  /** Committed mutations by the name the client sent: ran, threw, or sent again and skipped. */
  tally: Map<string, { processed: number; failed: number; skipped: number }>;
  /** Milliseconds the push waited for its transactions to start (group commit and the store's lock). */
  waitedMs: number;
  /** The most jobs that shared one of its transactions. */
  batchSize: number;
}

/** Who pushes, where, and how. */
export interface PushOptions {
  space: string;
  userID: string | undefined;
  limits: Pick<Limits, 'keyBytes' | 'valueBytes' | 'appCodeMs'>;
  /** A storage transaction per mutation rather than one for the whole push. */
  perMutation: boolean;
  /** Keep the prefix index, which pulls with a view read (see keys.ts). */
  prefixIndex?: boolean;
  /** The time the push happens at, for group activity and tombstones. */
  clock: SessionClock;
  /** What the space may hold: a mutation that would take it over fails (see quota.ts). */
  quota?: SpaceQuota | undefined;
}

/**
 * Runs a push's mutations in order (spec, push rules 2-7): in one storage transaction, or with
 * `perMutation` in one each, so a long push never holds the space's write lock for its whole
 * length (push rule 5 allows both). Clients are the pushing user's own: another user's client of the
 * same ID is another client. Throws an `HTTPError` when a client belongs to another of the
 * user's groups; in one transaction that commits nothing, per mutation it keeps those before it.
 */
export async function processPush(storage: Storage, strategy: Strategy, mutators: Mutators, push: PushRequest, options: PushOptions): Promise<PushOutcome> {
  const { space, userID, limits } = options;
  const all = push.mutations.map((mutation, index) => ({ mutation, index }));
  const batches = options.perMutation && all.length > 0 ? all.map((one) => [one]) : [all];
  const outcome = emptyOutcome();
  const watchdog = new Watchdog(limits.appCodeMs);
  try {
    for (const batch of batches) {
      // Group commit: pushes to this space that queue behind a running one share a transaction.
      const reads = strategy.pushReads(space, userID, push.clientGroupID, batch.map(({ mutation }) => mutation.clientID));
      let shared: BatchInfo | undefined;
      const done = await runBatched(storage, space, (tx, info) => ((shared = info), run(tx, batch)), reads);
      outcome.waitedMs += shared?.waitedMs ?? 0;
      outcome.batchSize = Math.max(outcome.batchSize, shared?.size ?? 0);
      if (done instanceof HTTPError) throw done;
      if (done === LOST) return { ...outcome, clientStateNotFound: true };
      outcome.failures.push(...done.failures);
      for (const [name, counts] of done.tally) {
        const sum = outcome.tally.get(name);
        if (sum === undefined) outcome.tally.set(name, counts);
        else for (const kind of ['processed', 'failed', 'skipped'] as const) sum[kind] += counts[kind];
      }
      outcome.stoppedBy = done.stoppedBy;
      outcome.changed ||= done.changed;
      if (done.stoppedBy) break;
    }
  } finally {
    watchdog.stop();
  }
  return outcome;

  /** One batch in a transaction: its outcome, or the refusal that keeps none of its writes. */
  async function run(tx: StorageTransaction, batch: Array<{ mutation: Mutation; index: number }>): Promise<{ result: PushOutcome | HTTPError | typeof LOST; keep: boolean }> {
    const session = await strategy.open(tx, space, options.clock, undefined, { prefixIndex: options.prefixIndex ?? false, maxKeyBytes: storage.maxKeyBytes });
    const group = push.clientGroupID;
    // Housekeeping removed this group's clients: the client must start a new group.
    const seen = await session.groupSeen(userID, group);
    if (seen === 'expired') return { result: LOST, keep: false };
    const outcome = emptyOutcome();
    const count = (name: string, kind: 'processed' | 'failed' | 'skipped') => {
      let counts = outcome.tally.get(name);
      if (counts === undefined) outcome.tally.set(name, (counts = { processed: 0, failed: 0, skipped: 0 }));
      counts[kind]++;
    };
    const clients = new Map<string, ClientRecord & { dirty: boolean }>();
    for (const { mutation, index } of batch) {
      let client = clients.get(mutation.clientID);
      if (client === undefined) {
        const stored = await session.getClient(userID, mutation.clientID);
        if (stored !== undefined && stored.clientGroupID !== group) {
          const error = new HTTPError(400, `mutations.${index}: client ${JSON.stringify(mutation.clientID)} belongs to another of your client groups`);
          return { result: error, keep: false };
        }
        // A new client's record starts at 0 and is tied to this group (spec, States).
        client = { clientGroupID: group, lastMutationID: stored?.lastMutationID ?? 0, dirty: stored === undefined };
        clients.set(mutation.clientID, client);
      }
      // A client numbers from 1 and re-sends from the last id it saw acknowledged, so one past
      // lastMutationID + 1 (an unknown client past 1 among them) saw mutations acknowledged that
      // this store no longer has: a wiped or restored database, a failover that lost commits.
      // The spec ignores it (push rule 3), which would block the client for ever, or hide that
      // what it was told is gone; this tells it to start over, as a lost cookie does on pull.
      // Nothing of this batch is kept.
      if (mutation.id > client.lastMutationID + 1) return { result: LOST, keep: false };
      // Already processed: the client re-sends everything pending.
      if (mutation.id <= client.lastMutationID) {
        count(mutation.name, 'skipped');
        continue;
      }

      const mtx = new MutationTransaction(session, { clientID: mutation.clientID, mutationID: mutation.id, userID }, limits);
      let failed = false;
      try {
        const mutator = mutatorNamed(mutators, mutation.name);
        await watchdog.run(mutation.name, () => mutator(mtx, mutation.args));
      } catch (error) {
        failed = true;
        mtx.discard();
        outcome.failures.push({ mutation, error });
        count(mutation.name, 'failed');
        if (error instanceof TemporaryError) {
          outcome.stoppedBy = error;
          break;
        }
        // Permanent (spec, push rule 6): none of its writes, but it counts as processed.
      }
      // Outside the try: a store that fails here fails the push (a 500, nothing committed), it
      // does not make the mutation look like a permanent error. Over its quota, a mutation fails
      // as if its mutator had thrown (spec, push rule 6): skipped, and the push goes on.
      const refused = failed || options.quota === undefined ? undefined : await mtx.overQuota(space, options.quota);
      if (refused !== undefined) {
        failed = true;
        mtx.discard();
        outcome.failures.push({ mutation, error: refused });
        count(mutation.name, 'failed');
      }
      if (!failed) {
        await mtx.flush();
        count(mutation.name, 'processed');
      }
      client.lastMutationID = mutation.id;
      client.dirty = true;
    }

    for (const [clientID, { dirty, ...record }] of clients) {
      if (dirty) await session.putClient(userID, clientID, record);
    }
    await session.touchGroup(userID, group, seen);
    outcome.changed = await session.commit();
    return { result: outcome, keep: true };
  }
}

function emptyOutcome(): PushOutcome {
  return { clientStateNotFound: false, failures: [], stoppedBy: undefined, changed: false, tally: new Map(), waitedMs: 0, batchSize: 0 };
}

/** What a batch resolves to when the client's state is lost: nothing of it is kept. */
const LOST = Symbol('client state lost');
