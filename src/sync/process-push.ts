import type { Mutation, PushRequest } from '../protocol/push-request.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import type { Storage, StorageTransaction } from '../storage/types.js';
import type { Limits } from './transactions/limits.js';
import type { Mutators } from './transactions/mutator.js';
import { mutatorNamed, Watchdog } from './transactions/app-code.js';
import type { SpaceQuota } from './transactions/quota.js';
import type { ClientRecord, SessionClock, SessionOptions, SpaceSession } from './version/strategy.js';
import { globalVersion as strategy } from './session/global-version.js';
import { type BatchInfo, runBatched } from './batching/group-commit.js';
import { MutationTransaction } from './transactions/write-transaction.js';
import type { MutationTally } from '../telemetry/facts.js';
import type { OlderSchema } from './schema/schema-options.js';
import { upgradeMutation } from './schema/upgrade.js';
import { reasonOf, REJECTED_TOPIC } from './schema/rejected.js';
import { overQuota, valueBytes } from './transactions/quota.js';

/** What a push's mutations came to so far: counts, waits, and what was committed. */
export interface PushTotals {
  /** Mutations whose mutator threw (permanent errors: skipped, lastMutationID advanced; or the temporary error that stopped the push), or whose quota refused them. */
  failures: Array<{ mutation: Mutation; error: unknown }>;
  /** True when the push committed a change (data or a lastMutationID), so the space's clients should pull. */
  changed: boolean;
  /** The keys of the entries it wrote; undefined when too many to tell (see `SpaceSession.touched`). */
  touched: readonly string[] | undefined;
  /** Committed mutations by the name the client sent: ran, threw, or sent again and skipped. */
  tally: Map<string, MutationTally>;
  /** Milliseconds the push waited for its transactions to start (group commit and the store's lock). */
  waitedMs: number;
  /** The most jobs that shared one of its transactions. */
  batchSize: number;
}

/**
 * How a push ended, with its totals (with `perMutation`, a push that ends early keeps the
 * batches committed before):
 * - `applied`: every mutation was processed, failed for good (push rule 6) or skipped as sent before;
 * - `stopped`: a mutator threw `stoppedBy`, a TemporaryError: it and those after it come again (push rule 7);
 * - `lost`: the push proved the server lost the client's state (ClientStateNotFound); nothing of its batch was committed;
 * - `refused`: a client belongs to another of the user's groups (`error`, a 400); nothing of its batch was committed.
 */
export type PushOutcome =
  | ({ kind: 'applied' } & PushTotals)
  | ({ kind: 'stopped'; stoppedBy: TemporaryError } & PushTotals)
  | ({ kind: 'lost' } & PushTotals)
  | ({ kind: 'refused'; error: HTTPError } & PushTotals);

/** Who pushes, where, and how. */
export interface PushOptions {
  space: string;
  userID: string | undefined;
  limits: Pick<Limits, 'keyBytes' | 'valueBytes' | 'appCodeMs'>;
  /** A storage transaction per mutation rather than one for the whole push. */
  perMutation: boolean;
  /** Which indexes and logs its writes keep (see `SessionOptions`). */
  session?: SessionOptions;
  /** The time the push happens at, for group activity and tombstones. */
  clock: SessionClock;
  /** What the space may hold: a mutation that would take it over fails (see quota.ts). */
  quota?: SpaceQuota | undefined;
  /**
   * The push is of an older schema version: its mutations run through its steps up to today's
   * (schema/upgrade.ts), and each that fails is kept as rejected (schema/rejected.ts).
   */
  older?: { schemaVersion: string; steps: readonly OlderSchema[] } | undefined;
}

/**
 * Runs a push's mutations in order (spec, push rules 2-7): in one storage transaction, or with
 * `perMutation` in one each, so a long push never holds the space's write lock for its whole
 * length (push rule 5 allows both). Clients are the pushing user's own: another user's client of the
 * same ID is another client. Resolves with how it ended; rejects only when the store fails.
 */
export async function processPush(storage: Storage, mutators: Mutators, push: PushRequest, options: PushOptions): Promise<PushOutcome> {
  const all = push.mutations.map((mutation, index) => ({ mutation, index }));
  const batches = options.perMutation && all.length > 0 ? all.map((one) => [one]) : [all];
  const totals = emptyTotals();
  const run: PushRun = { storage, mutators, push, options, watchdog: new Watchdog(options.limits.appCodeMs) };
  try {
    for (const batch of batches) {
      // Group commit: pushes to this space that queue behind a running one share a transaction.
      const reads = strategy.pushReads(
        options.space,
        options.userID,
        push.clientGroupID,
        batch.map(({ mutation }) => mutation.clientID),
      );
      let shared: BatchInfo | undefined;
      // Its reads are learned per group: a client's next push tends to read what its last one did.
      const result = await runBatched(storage, options.space, (tx, info) => ((shared = info), applyBatch(run, tx, batch)), {
        reads,
        name: readAheadName(options.userID, push.clientGroupID),
        lane: 'data',
      });
      totals.waitedMs += shared?.waitedMs ?? 0;
      totals.batchSize = Math.max(totals.batchSize, shared?.size ?? 0);
      if (result.kind === 'refused') return { kind: 'refused', error: result.error, ...totals };
      if (result.kind === 'lost') return ended('lost', totals);
      add(totals, result.totals);
      if (result.totals.stoppedBy) return { kind: 'stopped', stoppedBy: result.totals.stoppedBy, ...totals };
    }
  } finally {
    run.watchdog.stop();
  }
  return ended('applied', totals);
}

/** One push being processed: what each of its batches needs. */
interface PushRun {
  storage: Storage;
  mutators: Mutators;
  push: PushRequest;
  options: PushOptions;
  /** Bounds each mutator's run (limits.appCodeMs). */
  watchdog: Watchdog;
}

/**
 * What one batch came to: applied (its transaction commits), or, with nothing of it kept, the
 * client's state lost or a client refused.
 */
type BatchResult = { kind: 'applied'; totals: BatchTotals } | { kind: 'lost' } | { kind: 'refused'; error: HTTPError };

/** What one batch came to, and the temporary error that stopped it, if one did. */
type BatchTotals = PushTotals & { stoppedBy: TemporaryError | undefined };

/** What one mutation came to, in order of the spec's push rules. */
type MutationResult = 'skipped' | 'processed' | 'failed' | 'stopped' | 'lost';

/** A client as a batch sees it: its record, and whether the batch changed it. */
type BatchClient = ClientRecord & { dirty: boolean };

/** One batch in a transaction: its result, and whether to commit its writes. */
async function applyBatch(
  run: PushRun,
  tx: StorageTransaction,
  batch: ReadonlyArray<{ mutation: Mutation; index: number }>,
): Promise<{ result: BatchResult; keep: boolean }> {
  const { push, options } = run;
  const { userID } = options;
  const group = push.clientGroupID;
  const session = await strategy.open(tx, options.space, options.clock, undefined, { maxKeyBytes: run.storage.maxKeyBytes, ...options.session });
  // Housekeeping removed this group's clients: the client must start a new group.
  const seen = await session.groupSeen(userID, group);
  if (seen === 'expired') return { result: { kind: 'lost' }, keep: false };
  const totals: BatchTotals = { failures: [], changed: false, touched: [], tally: new Map(), waitedMs: 0, batchSize: 0, stoppedBy: undefined };
  const clients = new Map<string, BatchClient>();
  for (const { mutation, index } of batch) {
    let client = clients.get(mutation.clientID);
    if (client === undefined) {
      const stored = await session.getClient(userID, mutation.clientID);
      if (stored !== undefined && stored.clientGroupID !== group) {
        return {
          result: {
            kind: 'refused',
            error: new HTTPError(400, `mutations.${index}: client ${JSON.stringify(mutation.clientID)} belongs to another of your client groups`),
          },
          keep: false,
        };
      }
      // A new client's record starts at 0 and is tied to this group (spec, States).
      client = { clientGroupID: group, lastMutationID: stored?.lastMutationID ?? 0, dirty: stored === undefined };
      clients.set(mutation.clientID, client);
    }
    const result = await applyMutation(run, session, client, mutation, totals);
    if (result === 'lost') return { result: { kind: 'lost' }, keep: false };
    tally(totals, mutation.name, result === 'stopped' ? 'failed' : result);
    if (result === 'stopped') break;
  }
  for (const [clientID, { dirty, ...record }] of clients) {
    if (dirty) await session.putClient(userID, clientID, record);
  }
  await session.touchGroup(userID, group, seen, push.schemaVersion);
  totals.changed = await session.commit();
  totals.touched = session.touched();
  return { result: { kind: 'applied', totals }, keep: true };
}

/** Runs `mutation` for `client` unless the rules skip it; a failure is put in `totals`. */
async function applyMutation(run: PushRun, session: SpaceSession, client: BatchClient, mutation: Mutation, totals: BatchTotals): Promise<MutationResult> {
  // A client numbers from 1 and re-sends from the last id it saw acknowledged, so one past
  // lastMutationID + 1 (an unknown client past 1 among them) saw mutations acknowledged that
  // this store no longer has: a wiped or restored database, a failover that lost commits.
  // The spec ignores it (push rule 3), which would block the client for ever, or hide that
  // what it was told is gone; this tells it to start over, as a lost cookie does on pull.
  // Nothing of its batch is kept.
  if (mutation.id > client.lastMutationID + 1) return 'lost';
  // Already processed: the client re-sends everything pending.
  if (mutation.id <= client.lastMutationID) return 'skipped';
  const { options } = run;
  const mtx = new MutationTransaction(session, { clientID: mutation.clientID, mutationID: mutation.id, userID: options.userID }, options.limits);
  const fail = (error: unknown) => {
    mtx.discard();
    totals.failures.push({ mutation, error });
  };
  const { older } = options;
  try {
    await run.watchdog.run(mutation.name, () => {
      const { mutator, args } =
        older === undefined
          ? { mutator: mutatorNamed(run.mutators, mutation.name), args: mutation.args }
          : upgradeMutation(older.steps, run.mutators, mutation);
      return mutator(mtx, args);
    });
  } catch (error) {
    fail(error);
    if (error instanceof TemporaryError) {
      // Not processed: the client sends it again (spec, push rule 7).
      totals.stoppedBy = error;
      return 'stopped';
    }
    // Permanent (spec, push rule 6): none of its writes, but it counts as processed.
    done(client, mutation);
    if (older !== undefined) await reject(run, session, mutation, error);
    return 'failed';
  }
  // Outside the try: a store that fails here fails the push (a 500, nothing committed), it
  // does not make the mutation look like a permanent error. Over its quota, a mutation fails
  // as if its mutator had thrown (spec, push rule 6): skipped, and the push goes on.
  const refused = options.quota === undefined ? undefined : await mtx.overQuota(options.space, options.quota);
  if (refused !== undefined) {
    fail(refused);
    if (older !== undefined) await reject(run, session, mutation, refused);
  } else {
    // Only where the feed is on: the hot path builds no origin for a log it does not keep.
    if (session.logging)
      session.recordAs({
        kind: 'mutation',
        name: mutation.name,
        clientGroupID: run.push.clientGroupID,
        clientID: mutation.clientID,
        mutationID: mutation.id,
        userID: options.userID ?? null,
      });
    await mtx.flush();
  }
  done(client, mutation);
  return refused === undefined ? 'processed' : 'failed';
}

/**
 * Keeps `mutation`, of an older schema version, as rejected: an old client's work is never
 * dropped unseen (`inspect`, the change feed's `viewsync.rejected` event; `onError` is told by
 * the push's caller, as of any failure).
 */
async function reject(run: PushRun, session: SpaceSession, mutation: Mutation, error: unknown): Promise<void> {
  const { push, options } = run;
  const userID = options.userID ?? null;
  if (session.logging)
    session.recordAs({
      kind: 'mutation',
      name: mutation.name,
      clientGroupID: push.clientGroupID,
      clientID: mutation.clientID,
      mutationID: mutation.id,
      userID,
    });
  const record = {
    clientGroupID: push.clientGroupID,
    clientID: mutation.clientID,
    id: mutation.id,
    name: mutation.name,
    args: mutation.args ?? null,
    schemaVersion: push.schemaVersion,
    reason: reasonOf(error),
    at: options.clock.now,
    userID,
  };
  // The feed's event is history like any other, held to the space's quota: a client pushing
  // nothing but rejected mutations fills no more than the ring of kept ones.
  const over =
    session.logging &&
    options.quota !== undefined &&
    (await overQuota(session, options.space, options.quota, new Map(), undefined, [[REJECTED_TOPIC, valueBytes(record)]])) !== undefined;
  await session.keepRejected(record, !over);
}

/** `mutation` is processed: its client's lastMutationID moves to it. */
function done(client: BatchClient, mutation: Mutation): void {
  client.lastMutationID = mutation.id;
  client.dirty = true;
}

/** Counts one mutation under the name the client sent. */
function tally(totals: PushTotals, name: string, kind: keyof MutationTally): void {
  let counts = totals.tally.get(name);
  if (counts === undefined) totals.tally.set(name, (counts = { processed: 0, failed: 0, skipped: 0 }));
  counts[kind]++;
}

/** Adds a batch's totals to the push's. */
function add(total: PushTotals, batch: PushTotals): void {
  total.failures.push(...batch.failures);
  for (const [name, counts] of batch.tally) {
    const sum = total.tally.get(name);
    if (sum === undefined) total.tally.set(name, { ...counts });
    else for (const kind of ['processed', 'failed', 'skipped'] as const) sum[kind] += counts[kind];
  }
  total.changed ||= batch.changed;
  if (batch.changed)
    total.touched = total.touched === undefined || batch.touched === undefined ? undefined : [...new Set([...total.touched, ...batch.touched])];
}

/** The name a group's pushes learn their reads under (see read-ahead.ts): the group, as the user's. */
function readAheadName(userID: string | undefined, clientGroupID: string): string {
  return `push ${userID === undefined ? '' : JSON.stringify(userID)} ${clientGroupID}`;
}

/**
 * A push that ended `kind`, with its totals. Written out field by field, as is the batch's totals
 * object above: built with spreads, these two objects cost 5% of a one-mutation push on the memory
 * store (V8 copies a spread that follows another field by its slow path).
 */
function ended(kind: 'applied' | 'lost', totals: PushTotals): PushOutcome {
  const { failures, changed, touched, tally, waitedMs, batchSize } = totals;
  return { kind, failures, changed, touched, tally, waitedMs, batchSize };
}

function emptyTotals(): PushTotals {
  return { failures: [], changed: false, touched: [], tally: new Map(), waitedMs: 0, batchSize: 0 };
}
