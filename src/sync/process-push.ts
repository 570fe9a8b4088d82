import type { Mutation, PushRequest } from '../protocol/push-request.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import type { Storage, StorageTransaction } from '../storage/types.js';
import type { Limits } from './transactions/limits.js';
import type { Mutator, Mutators } from './transactions/mutator.js';
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

/**
 * Runs mutators (or a backend's transaction function), rejecting with a
 * {@link MutatorTimeoutError} once one has run `ms` milliseconds. The caller then discards its transaction, so a mutator that wakes up later finds
 * it closed; its promise is abandoned. One timer serves a whole push, however many mutations:
 * when it fires it expires the running mutator if that one is past its time, else waits again.
 */
export class Watchdog {
  readonly #ms: number;
  readonly #expired: (name: string, ms: number) => MutatorTimeoutError;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: { started: number; name: string; expire: (error: Error) => void } | undefined;

  /** `expired` makes the error a call past its time rejects with; default: a mutator's. */
  constructor(ms: number, expired = (name: string, ms: number) => new MutatorTimeoutError(name, ms)) {
    this.#ms = ms;
    this.#expired = expired;
  }

  /** Calls `call`, named `name` in a timeout's message: undefined when it returned without a promise. */
  run(name: string, call: () => unknown): Promise<void> | undefined {
    const result = call();
    // A mutator that returned without a promise has finished; most never need the timer.
    if (!isThenable(result)) return undefined;
    if (!(this.#ms < Infinity)) return Promise.resolve(result).then(() => {});
    return new Promise<void>((resolve, reject) => {
      const running = { started: performance.now(), name, expire: reject };
      this.#running = running;
      this.#arm(this.#ms);
      const settle = (ok: boolean) => (error?: unknown) => {
        if (this.#running === running) this.#running = undefined;
        if (ok) resolve();
        else reject(error);
      };
      result.then(settle(true), settle(false));
    });
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delay: number): void {
    this.#timer ??= setTimeout(() => this.#fire(), delay);
  }

  #fire(): void {
    this.#timer = undefined;
    const running = this.#running;
    if (running === undefined) return;
    const left = running.started + this.#ms - performance.now();
    if (left > 0) return this.#arm(left);
    this.#running = undefined;
    running.expire(this.#expired(running.name, this.#ms));
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

function emptyOutcome(): PushOutcome {
  return { clientStateNotFound: false, failures: [], stoppedBy: undefined, changed: false, tally: new Map(), waitedMs: 0, batchSize: 0 };
}

/** What a batch resolves to when the client's state is lost: nothing of it is kept. */
const LOST = Symbol('client state lost');

/** The mutator registered as `name` (an own property: never `toString` or `__proto__`). */
export function mutatorNamed(mutators: Mutators, name: string): Mutator {
  const mutator = Object.hasOwn(mutators, name) ? mutators[name] : undefined;
  if (mutator === undefined) throw new UnknownMutatorError(name);
  return mutator;
}

/** A push named a mutator the server does not have. */
export class UnknownMutatorError extends Error {
  override name = 'UnknownMutatorError';
  constructor(name: string) {
    super(`No mutator is named ${JSON.stringify(name)}`);
  }
}

/**
 * A mutator ran past `limits.appCodeMs`. It stops its push like a `TemporaryError` (503 with
 * `Retry-After`): its writes are discarded and its client sends it again later. A backend call
 * (`transact`, `mutate`, `read`) past its `timeoutMs` rejects with one too.
 */
export class MutatorTimeoutError extends TemporaryError {
  override name = 'MutatorTimeoutError';
  constructor(mutatorName: string, ms: number, message = `Mutator ${JSON.stringify(mutatorName)} ran longer than ${ms} ms (limits.appCodeMs); its writes were discarded`) {
    super(message, {
      retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
    });
  }
}
